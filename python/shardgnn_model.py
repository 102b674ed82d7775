"""shardgnn's models in plain PyTorch: load a trained ``weights.pt`` and run it on a graph.

The layers compute exactly what shardgnn's full-neighbourhood inference computes (trainer/models.hpp):

* ``SAGEConv``  (GraphSAGE, mean aggregator): ``fc_self(h_v) + fc_neigh(mean_{u in N(v)} h_u)``;
  a node without neighbours gets 0 for the mean. DGL: ``SAGEConv(in, out, 'mean')``, the same
  names. PyG: ``SAGEConv(in, out)`` with ``lin_l.weight = fc_neigh.weight``,
  ``lin_l.bias = fc_self.bias`` and ``lin_r.weight = fc_self.weight``.
* ``GraphConv`` (GCN): ``D^-1/2 (A + I) D^-1/2 h W + b``, the degree counting the self-loop
  (``deg(v) = indptr[v+1] - indptr[v] + 1``; the graph is taken as symmetric). DGL:
  ``GraphConv(in, out, norm='both')`` on the graph with self-loops added (``dgl.add_self_loop``),
  ``weight = fc.weight.T``. PyG: ``GCNConv(in, out)`` with ``lin.weight = fc.weight``.
* ``GATConv`` (GAT): per head ``e_uv = LeakyReLU_0.2(a_l . W h_u + a_r . W h_v)``, softmax over
  ``v``'s neighbours and ``v`` itself, ``sum_u alpha_uv W h_u + b``. DGL:
  ``GATConv(in, out, heads)`` on the graph with self-loops, the same names (``bias`` flattened to
  [heads * out]). PyG: ``GATConv(in, out, heads)`` with ``lin.weight = fc.weight``,
  ``att_src = attn_l``, ``att_dst = attn_r``, ``bias`` flattened; the output layer as
  ``concat=False`` with ``bias = bias.mean(0)`` (shardgnn adds each head's bias, then averages).

PyG's edge_index for a dataset folder is ``[indices, the row of each entry]`` (messages flow from
a node's neighbours to it).

The model (``Gnn``): layers ``conv0 .. conv{L-1}``; ReLU between layers (GAT: ELU over the
concatenated heads); the last layer gives the logits (GAT: the mean of its heads). Dropout only
acts in training, so inference has none. Messages go from the neighbours ``indices[indptr[v]:
indptr[v+1]]`` of a node ``v`` to ``v``.

Standard PyTorch and numpy only. As a program it scores a dataset folder::

    python3 shardgnn_model.py RUN_DIR/weights.pt DATASET_DIR [--out predictions.npy] [--layer N]

printing the test accuracy (with labels and a test split) and writing the logits or embeddings.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


class Graph:
    """A graph's CSR (``indptr``, ``indices``) as edge lists, messages from ``src`` to ``dst``."""

    def __init__(self, indptr, indices):
        # Copies: a dataset's arrays are read-only memory maps, which torch will not wrap.
        indptr = torch.from_numpy(np.array(indptr, dtype=np.int64))
        self.src = torch.from_numpy(np.array(indices, dtype=np.int64))
        self.num_nodes = indptr.numel() - 1
        self.degree = (indptr[1:] - indptr[:-1]).to(torch.float32)
        self.dst = torch.repeat_interleave(torch.arange(self.num_nodes), indptr[1:] - indptr[:-1])

    def sum_neighbours(self, h, weight=None):
        """out[v] = sum over v's neighbours u of weight_uv * h[u]."""
        msgs = h.index_select(0, self.src)
        if weight is not None:
            msgs = msgs * weight.view(-1, *([1] * (h.dim() - 1)))
        return torch.zeros((self.num_nodes,) + tuple(h.shape[1:]), dtype=h.dtype).index_add_(0, self.dst, msgs)


class SAGEConv(nn.Module):
    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.fc_self = nn.Linear(in_feats, out_feats, bias=True)
        self.fc_neigh = nn.Linear(in_feats, out_feats, bias=False)

    def forward(self, g, h):
        mean = g.sum_neighbours(h) / g.degree.clamp(min=1).unsqueeze(1)
        return self.fc_self(h) + self.fc_neigh(mean)


class GraphConv(nn.Module):
    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.fc = nn.Linear(in_feats, out_feats, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_feats))

    def forward(self, g, h):
        norm = (g.degree + 1).rsqrt().unsqueeze(1)  # the self-loop counts in the degree
        x = self.fc(h) * norm
        return (g.sum_neighbours(x) + x) * norm + self.bias


class GATConv(nn.Module):
    def __init__(self, in_feats, out_feats, heads):
        super().__init__()
        self.heads, self.out_feats = heads, out_feats
        self.fc = nn.Linear(in_feats, out_feats * heads, bias=False)
        self.attn_l = nn.Parameter(torch.zeros(1, heads, out_feats))
        self.attn_r = nn.Parameter(torch.zeros(1, heads, out_feats))
        self.bias = nn.Parameter(torch.zeros(heads, out_feats))

    def forward(self, g, h):
        n = g.num_nodes
        z = self.fc(h).view(n, self.heads, self.out_feats)
        el, er = (z * self.attn_l).sum(-1), (z * self.attn_r).sum(-1)  # [n, heads]
        loops = torch.arange(n)
        src, dst = torch.cat([g.src, loops]), torch.cat([g.dst, loops])
        e = F.leaky_relu(el[src] + er[dst], 0.2)
        top = torch.full((n, self.heads), float("-inf")).scatter_reduce(0, dst.unsqueeze(1).expand_as(e), e, reduce="amax")
        ex = torch.exp(e - top[dst])
        alpha = ex / torch.zeros(n, self.heads).index_add_(0, dst, ex)[dst]
        out = torch.zeros(n, self.heads, self.out_feats).index_add_(0, dst, z[src] * alpha.unsqueeze(-1))
        return out + self.bias


class Gnn(nn.Module):
    """``kind`` 'sage', 'gcn' or 'gat'; ``widths`` = [in, hidden..., out] (GAT hidden widths are
    heads x per-head width, concatenated)."""

    def __init__(self, kind, widths, heads=1):
        super().__init__()
        self.kind, self.heads, self.layers = kind, heads, len(widths) - 1
        for l in range(self.layers):
            last = l + 1 == self.layers
            if kind == "sage":
                conv = SAGEConv(widths[l], widths[l + 1])
            elif kind == "gcn":
                conv = GraphConv(widths[l], widths[l + 1])
            elif kind == "gat":
                conv = GATConv(widths[l], widths[l + 1] if last else widths[l + 1] // heads, heads)
            else:
                raise ValueError(f"model kind {kind!r}: expected sage, gcn or gat")
            self.add_module(f"conv{l}", conv)

    @classmethod
    def from_weights(cls, path):
        """The model a shardgnn weights.pt holds, its kind and widths read off the names and shapes."""
        w = torch.load(path, map_location="cpu", weights_only=True)
        if "conv0.fc_self.weight" in w:
            kind, name = "sage", "fc_self.weight"
        elif "conv0.attn_l" in w:
            kind, name = "gat", "fc.weight"
        elif "conv0.fc.weight" in w:
            kind, name = "gcn", "fc.weight"
        else:
            raise ValueError(f"{path}: no first layer (conv0.fc_self.weight, conv0.attn_l or conv0.fc.weight)")
        layers = 0
        while f"conv{layers}.{name}" in w:
            layers += 1
        heads = w["conv0.attn_l"].shape[1] if kind == "gat" else 1
        widths = [w[f"conv0.{name}"].shape[1]]
        for l in range(layers):
            last = l + 1 == layers
            widths.append(w[f"conv{l}.attn_l"].shape[2] if kind == "gat" and last else w[f"conv{l}.{name}"].shape[0])
        model = cls(kind, widths, heads)
        model.load_state_dict(w, strict=True)
        return model.eval()

    def forward(self, g, x, layer=None):
        """The logits [n, out]; with ``layer``, also the rows after that many layers (0: ``x``)."""
        if layer is not None and not 0 <= layer <= self.layers:
            raise ValueError(f"layer {layer}: the model has {self.layers} layers (0 = the input features)")
        h, kept = x, (x if layer == 0 else None)
        for l in range(self.layers):
            h = getattr(self, f"conv{l}")(g, h)
            last = l + 1 == self.layers
            if self.kind == "gat":
                h = h.mean(1) if last else F.elu(h.flatten(1))
            elif not last:
                h = F.relu(h)
            if layer == l + 1:
                kept = h
        return (h, kept) if layer is not None else h


def load_dataset(folder):
    """A shardgnn dataset folder's arrays, memory-mapped: {name: numpy array} from meta.json.
    bfloat16 features (stored as uint16, the top half of float32) come back as float32."""
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    d = {name: np.load(os.path.join(folder, a["file"]), mmap_mode="r") for name, a in meta["arrays"].items()}
    if meta.get("feature_dtype") == "bfloat16" and "features" in d:
        d["features"] = (d["features"].astype(np.uint32) << 16).view(np.float32)
    return d


def main(argv=None):
    p = argparse.ArgumentParser(description="Score a shardgnn dataset folder with a trained weights.pt in plain PyTorch.")
    p.add_argument("weights")
    p.add_argument("dataset")
    p.add_argument("--out", help="write the logits (or, with --layer, that layer's rows) here as .npy")
    p.add_argument("--layer", type=int, help="the rows after this many layers (0 = the input features)")
    a = p.parse_args(argv)
    model = Gnn.from_weights(a.weights)
    d = load_dataset(a.dataset)
    g = Graph(d["indptr"], d["indices"])
    x = torch.from_numpy(np.array(d["features"], dtype=np.float32)) if "features" in d else torch.zeros(g.num_nodes, 0)
    with torch.no_grad():
        if a.layer is None:
            logits, rows = model(g, x), None
        else:
            logits, rows = model(g, x, layer=a.layer)
    if "labels" in d and "test_idx" in d and len(d["test_idx"]) > 0:
        test = torch.from_numpy(np.array(d["test_idx"]))
        labels = torch.from_numpy(np.array(d["labels"]))[test]
        known = labels >= 0
        acc = (logits[test].argmax(1)[known] == labels[known]).float().mean().item()
        print(f"test accuracy {acc:.4f} ({int(known.sum())} nodes), {model.kind}, {model.layers} layers")
    if a.out:
        np.save(a.out, (logits if rows is None else rows).numpy())
    return 0


if __name__ == "__main__":
    sys.exit(main())
