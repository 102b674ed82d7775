#!/usr/bin/env python3
"""DGL's R-GAT on a typed shardgnn dataset folder, one process: the peer of `bench hetero` (issue
43), in the shape of MLPerf's GNN reference (a HeteroGraphConv of one GATConv per relation, summed
per destination type, DGL's neighbour sampler with the fanouts applied per relation), with the
parts shardgnn's RelGnn adds so that both train the same model: a linear encoder per node type to
the hidden width first (the reference feeds IGB-Het's equal-width features straight in), a self
term per layer (the reference relies on IGB-Het's cites self-loops), ELU between layers and the
heads averaged at the output. An entry u -> v of relation (src, name, dst) in shardgnn's rows is
v's message to u, so it becomes the DGL edge v -> u of type (dst, name, src); the relation is the
entry's stored id where the folder has them (format 5), else its end types'. Writes one JSON
object to --result: each epoch's seconds and validation accuracy (sampled with the training
fanouts), and when --target is reached, the seconds of training until then. The dataset is read by
bench/peers/dataset_input.py (any format version, id width and feature storage); --check-input
reads and checks it only (numpy, no DGL) and prints what it read. Benchmark-only."""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataset_input import Dataset, InputError, check_input_main, print_described  # noqa: E402
from result import write_result  # noqa: E402


def read_input(dataset):
    """Per relation (src, name, dst) its edges as DGL's (dst, name, src) type's (source, destination)
    ids within their types, per type its features, and the one labelled type's classes and
    splits within it (numpy only)."""
    d = Dataset(dataset)
    offsets = d.type_offsets()
    names = [t["name"] for t in d.node_types]
    type_of = lambda ids: np.searchsorted(offsets, ids, side="right") - 1
    indptr, indices = d.csr()
    rows = np.repeat(np.arange(d.n, dtype=np.int64), np.diff(indptr))
    tu, tv = type_of(rows), type_of(indices)
    edges, etypes = {}, {}
    covered = np.zeros(len(indices), dtype=bool)
    rel = d.edge_relations() if d.relation_ids else None
    for i, r in enumerate(d.relations):
        s, t = names.index(r["src"]), names.index(r["dst"])
        if rel is None:
            m = (tu == s) & (tv == t)
            if covered[m].any():
                raise InputError(f"{d.meta_path}: two relations join {r['src']} to {r['dst']} and the folder stores no relation ids")
            covered |= m
        else:
            # A stored relation (several may join one pair of types) names the entry's end types.
            m = rel == i
            wrong = np.flatnonzero(m & ((tu != s) | (tv != t)))
            if wrong.size:
                raise InputError(f"{os.path.join(d.folder, d.arrays['edge_relations']['file'])}: element {int(wrong[0])} is relation {i} "
                                 f"({r['src']} to {r['dst']}), but the entry joins {names[tu[wrong[0]]]} to {names[tv[wrong[0]]]}")
        key = f'{r["src"]}__{r["name"]}__{r["dst"]}'
        edges[key] = {"src": indices[m] - offsets[t], "dst": rows[m] - offsets[s]}
        etypes[key] = (r["dst"], r["name"], r["src"])
    labels_all = d.labels()
    labelled = [i for i in range(len(names)) if (labels_all[offsets[i]:offsets[i + 1]] >= 0).any()]
    if len(labelled) != 1:
        raise InputError(f"{d.folder}: labels of {len(labelled)} node types, this peer trains one labelled type")
    first, end = offsets[labelled[0]], offsets[labelled[0] + 1]
    split = {}
    for name in ("train_idx", "val_idx"):
        ids = d.split(name)
        if ids.size and (ids.min() < first or ids.max() >= end):
            raise InputError(f"{d.folder}: {name} holds nodes outside the labelled type {names[labelled[0]]}")
        split[name] = ids - first
    return {"node_types": d.node_types, "relations": d.relations, "target_type": names[labelled[0]], "edges": edges, "etypes": etypes,
            "features": {t["name"]: d.type_features(t) for t in d.node_types if t["feature_dim"] > 0},
            "labels": labels_all[first:end], "train": split["train_idx"], "val": split["val_idx"], "classes": d.classes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--result", help="write the result (one JSON object) here (required unless --check-input)")
    ap.add_argument("--check-input", action="store_true", help="read and check the dataset, print what was read, stop (no DGL)")
    ap.add_argument("--fanouts", default="5,10,15", help="DGL order: input layer first (MLPerf: 5,10,15)")
    ap.add_argument("--relation-fanouts", help="JSON: per layer, input layer first, {relation label src__name__dst: fanout}; replaces --fanouts")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--target", type=float, default=0.0, help="validation accuracy whose first epoch ends the clock")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    inp = check_input_main("dgl_rgat", lambda: read_input(a.dataset))
    if a.check_input:
        return print_described(inp)
    if not a.result:
        ap.error("--result FILE is required")

    os.environ.setdefault("DGLBACKEND", "pytorch")
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import dgl
    import dgl.nn as dglnn

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    types, target_type = inp["node_types"], inp["target_type"]
    data = {inp["etypes"][k]: (torch.from_numpy(e["src"]), torch.from_numpy(e["dst"])) for k, e in inp["edges"].items()}
    g = dgl.heterograph(data, num_nodes_dict={t["name"]: t["count"] for t in types})
    feats = {t: torch.from_numpy(f) for t, f in inp["features"].items()}
    labels, train, val = torch.from_numpy(inp["labels"]), torch.from_numpy(inp["train"]), torch.from_numpy(inp["val"])
    classes = inp["classes"]
    fanouts = [int(x) for x in a.fanouts.split(",")]
    etypes = g.canonical_etypes
    if a.relation_fanouts:
        # Our relation (src, name, dst) is DGL's edge type (dst, name, src): its edges run from
        # the entries to the rows that list them.
        fanouts = [{inp["etypes"][label]: n for label, n in layer.items()} for layer in json.loads(a.relation_fanouts)]
    H, hidden = a.heads, a.hidden

    class RGAT(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.ModuleDict({t: nn.Linear(f.shape[1], hidden) for t, f in feats.items()})
            self.emb = nn.ModuleDict({t["name"]: nn.Embedding(t["count"], hidden) for t in types if t["feature_dim"] == 0})
            self.convs, self.selfs = nn.ModuleList(), nn.ModuleList()
            for l in range(len(fanouts)):
                out = classes if l + 1 == len(fanouts) else hidden // H
                self.convs.append(dglnn.HeteroGraphConv({e: dglnn.GATConv(hidden, out, H, allow_zero_in_degree=True, bias=False) for e in etypes}, aggregate="sum"))
                self.selfs.append(nn.ModuleDict({t["name"]: nn.Linear(hidden, out * H) for t in types}))
            self.drop = nn.Dropout(a.dropout)

        def forward(self, blocks, input_nodes):
            input_nodes = by_type(input_nodes)
            h = {t: (self.enc[t](feats[t][ids]) if t in self.enc else self.emb[t](ids)) for t, ids in input_nodes.items()}
            for l, (conv, block) in enumerate(zip(self.convs, blocks)):
                h = {t: self.drop(x) for t, x in h.items()}
                msg = conv(block, h)
                last = l + 1 == len(self.convs)
                out = {}
                for t in block.dsttypes:
                    n = block.num_dst_nodes(t)
                    if n == 0:
                        continue
                    x = self.selfs[l][t](h[t][:n]).view(n, H, -1)
                    if t in msg:
                        x = x + msg[t]
                    out[t] = x.mean(1) if last else F.elu(x.flatten(1))
                h = out
            return h[target_type]

    def by_type(ids):
        # DGL hands a graph of one node type (a knowledge graph's entities) its ids bare, not by type.
        return ids if isinstance(ids, dict) else {target_type: ids}

    model = RGAT()
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    sampler = dgl.dataloading.NeighborSampler(fanouts)
    loader = dgl.dataloading.DataLoader(g, {target_type: train}, sampler, batch_size=a.batch, shuffle=True, num_workers=0)
    val_loader = dgl.dataloading.DataLoader(g, {target_type: val}, sampler, batch_size=4096, shuffle=False, num_workers=0)
    epoch_times, val_accs, to_target = [], [], None
    trained = 0.0
    for _ in range(a.epochs):
        model.train()
        t0 = time.perf_counter()
        for input_nodes, output_nodes, blocks in loader:
            loss = F.cross_entropy(model(blocks, input_nodes), labels[by_type(output_nodes)[target_type]])
            opt.zero_grad()
            loss.backward()
            opt.step()
        epoch_times.append(time.perf_counter() - t0)
        trained += epoch_times[-1]
        model.eval()
        correct = 0
        with torch.no_grad():
            for input_nodes, output_nodes, blocks in val_loader:
                correct += int((model(blocks, input_nodes).argmax(1) == labels[by_type(output_nodes)[target_type]]).sum())
        val_accs.append(correct / len(val))
        if to_target is None and a.target > 0 and val_accs[-1] >= a.target:
            to_target = trained
    write_result(a.result, {"dgl_version": dgl.__version__, "torch_version": torch.__version__, "threads": a.threads, "epoch_s": min(epoch_times),
                            "epoch_times": epoch_times, "val_acc": val_accs, "seconds_to_target": to_target, "target": a.target})


if __name__ == "__main__":
    sys.exit(main())
