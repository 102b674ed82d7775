#!/usr/bin/env python3
"""DGL's link-prediction training on a shardgnn dataset folder split by `data split-edges`, one
process: the peer of `shardgnn bench train --task link`. DGL's edge dataloader
(as_edge_prediction_sampler over a NeighborSampler, exclude="reverse_id", Uniform negatives) over
each undirected training edge once an epoch, as shardgnn's link batches take them; the same model
(SAGEConv layers, ReLU between, dropout), dot-product scores, binary cross-entropy,
Adam. The test AUC is scored on the split's test edges and negatives from layer-wise
full-neighbourhood embeddings. Writes one JSON object to --result ({epoch_s, test_auc, ...}).
The dataset is read by bench/peers/dataset_input.py (any format version, id width and feature
storage); --check-input reads and checks it only (numpy, no DGL) and prints what it read.
Benchmark-only."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataset_input import Dataset, InputError, check_input_main, print_described  # noqa: E402
from peer_models import add_training_args, make_sage, timed_epochs  # noqa: E402
from result import write_result  # noqa: E402


def roc_auc(pos, neg):
    """P(positive above negative), ties counted half (as shardgnn's and scikit-learn's)."""
    neg = np.sort(neg)
    lo, hi = np.searchsorted(neg, pos, "left"), np.searchsorted(neg, pos, "right")
    return float((lo + 0.5 * (hi - lo)).sum() / (len(pos) * len(neg)))


def read_input(dataset):
    """The graph as edges with each one's reverse, the features and the test pairs, as DGL and
    torch are handed them (numpy only)."""
    d = Dataset(dataset)
    indptr, indices = d.csr()
    n = d.n
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    # The reverse of entry (u, v) is the entry (v, u): rows are sorted, so the keys u * n + v are
    # too (int64 keys: n^2 passes int32 at 46,341 nodes).
    keys = src * n + indices
    rev = np.searchsorted(keys, indices * n + src)
    if len(keys) and not (keys[np.minimum(rev, len(keys) - 1)] == indices * n + src).all():
        raise InputError(f"{d.folder}: the graph is not symmetric (an edge lacks its reverse): link prediction's peer needs undirected edges")
    return {"src": src, "dst": indices, "reverse": rev, "features": d.features(),
            "test_pos": d.pairs("test_pos_edges"), "test_neg": d.pairs("test_neg_edges")}


def main():
    ap = argparse.ArgumentParser()
    add_training_args(ap, "10,10", "training edges per batch")
    ap.add_argument("--negatives", type=int, default=1)
    a = ap.parse_args()
    inp = check_input_main("dgl_link", lambda: read_input(a.dataset))
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
    src, indices, rev = inp["src"], inp["dst"], inp["reverse"]
    n = len(inp["features"])
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(indices)), num_nodes=n)
    feats = torch.from_numpy(inp["features"])
    train_eids = torch.from_numpy(np.nonzero(src < indices)[0])
    fanouts = [int(x) for x in a.fanouts.split(",")]
    model = make_sage(feats.shape[1], a.hidden, a.hidden, len(fanouts), a.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler(fanouts), exclude="reverse_id", reverse_eids=torch.from_numpy(rev),
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(a.negatives))
    loader = dgl.dataloading.DataLoader(g, train_eids, sampler, batch_size=a.batch, shuffle=True, drop_last=False, num_workers=0)
    def loss_of(batch):
        input_nodes, pair_graph, neg_graph, blocks = batch
        h = model(blocks, feats[input_nodes])
        pu, pv = pair_graph.edges()
        nu, nv = neg_graph.edges()
        pos, neg = (h[pu] * h[pv]).sum(1), (h[nu] * h[nv]).sum(1)
        target = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)])
        return F.binary_cross_entropy_with_logits(torch.cat([pos, neg]), target)

    epoch_times, first_loss = timed_epochs(model, opt, loader, a.epochs, loss_of)
    # Layer-wise full-neighbourhood inference over every node, then the test pairs' scores.
    model.eval()
    full = dgl.dataloading.MultiLayerFullNeighborSampler(1)
    nodes = torch.arange(n)
    x = feats
    with torch.no_grad():
        for i, layer in enumerate(model.layers):
            out = torch.empty(n, layer.fc_self.out_features)
            for input_nodes, output_nodes, blocks in dgl.dataloading.DataLoader(g, nodes, full, batch_size=8192, shuffle=False, num_workers=0):
                y = layer(blocks[0], x[input_nodes])
                out[output_nodes] = F.relu(y) if i + 1 < len(model.layers) else y
            x = out
    score = lambda pairs: (x[pairs[:, 0]] * x[pairs[:, 1]]).sum(1).numpy()
    test_auc = roc_auc(score(torch.from_numpy(inp["test_pos"])), score(torch.from_numpy(inp["test_neg"])))
    write_result(a.result, {"dgl_version": dgl.__version__, "torch_version": torch.__version__, "threads": a.threads, "model": "sage",
                            "epoch_s": min(epoch_times), "epoch_times": epoch_times, "first_epoch_loss": first_loss, "test_acc": test_auc,
                            "test_auc": test_auc, "train_edges": int(len(train_eids))})


if __name__ == "__main__":
    sys.exit(main())
