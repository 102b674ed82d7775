#!/usr/bin/env python3
"""DGL's sampler-based GraphSAGE (or GCN) training on a shardgnn dataset folder, one process: the
peer of `shardgnn bench train` (DistDGL itself is not run; see the issue notes). Same model shape
(mean-aggregator SAGEConv or GraphConv layers, hidden width, dropout), optimiser, fanouts and
batch size. Writes one JSON object to --result with the epoch time, the first epoch's mean loss and the test
accuracy (on sampled neighbourhoods with the training fanouts, or with --eval full on every
neighbour). Benchmark-only."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataset_input import Dataset, check_input_main, print_described  # noqa: E402
from peer_models import add_training_args, make_gcn, make_sage, timed_epochs  # noqa: E402
from result import write_result  # noqa: E402


def read_input(dataset):
    """The graph, features, classes and splits, as DGL and torch are handed them (numpy only)."""
    d = Dataset(dataset)
    indptr, indices = d.csr()
    return {"indptr": indptr, "indices": indices, "features": d.features(), "labels": d.labels(),
            "train": d.split("train_idx"), "test": d.split("test_idx"), "classes": d.classes}


def main():
    ap = argparse.ArgumentParser()
    add_training_args(ap, "5,10,15", "seeds per batch")
    ap.add_argument("--model", choices=["sage", "gcn"], default="sage",
                    help="gcn: DGL GraphConv on the blocks, the graph given self-loops (a block has none of its own)")
    ap.add_argument("--eval", choices=["sampled", "full"], default="sampled")
    a = ap.parse_args()
    inp = check_input_main("dgl_train", lambda: read_input(a.dataset))
    if a.check_input:
        return print_described(inp)
    if not a.result:
        ap.error("--result FILE is required")

    os.environ.setdefault("DGLBACKEND", "pytorch")
    import torch
    import torch.nn.functional as F
    import dgl

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    t = {k: torch.from_numpy(v) for k, v in inp.items() if isinstance(v, np.ndarray)}
    indptr, indices = t["indptr"], t["indices"]
    n = indptr.numel() - 1
    g = dgl.graph(("csc", (indptr, indices, torch.empty(0, dtype=torch.int64))), num_nodes=n)
    if a.model == "gcn":
        g = dgl.add_self_loop(dgl.remove_self_loop(g))
    feats, labels, train, test = t["features"], t["labels"], t["train"], t["test"]
    classes = inp["classes"]
    fanouts = [int(x) for x in a.fanouts.split(",")]

    model = (make_gcn if a.model == "gcn" else make_sage)(feats.shape[1], a.hidden, classes, len(fanouts), a.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    sampler = dgl.dataloading.NeighborSampler(fanouts)
    loader = dgl.dataloading.DataLoader(g, train, sampler, batch_size=a.batch, shuffle=True, drop_last=False, num_workers=0)
    def loss_of(batch):
        input_nodes, output_nodes, blocks = batch
        return F.cross_entropy(model(blocks, feats[input_nodes]), labels[output_nodes])

    epoch_times, first_loss = timed_epochs(model, opt, loader, a.epochs, loss_of)
    model.eval()
    correct = 0
    scorer = dgl.dataloading.MultiLayerFullNeighborSampler(len(fanouts)) if a.eval == "full" else sampler
    test_loader = dgl.dataloading.DataLoader(g, test, scorer, batch_size=4096, shuffle=False, num_workers=0)
    with torch.no_grad():
        for input_nodes, output_nodes, blocks in test_loader:
            correct += int((model(blocks, feats[input_nodes]).argmax(1) == labels[output_nodes]).sum())
    write_result(a.result, {"dgl_version": dgl.__version__, "torch_version": torch.__version__, "threads": a.threads,
                            "model": a.model, "epoch_s": min(epoch_times), "epoch_times": epoch_times, "first_epoch_loss": first_loss,
                            "test_acc": correct / len(test)})


if __name__ == "__main__":
    sys.exit(main())
