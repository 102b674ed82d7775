"""shardgnn's models in plain PyTorch: load a trained ``weights.pt`` and run it on a graph.

The model is built from its card (``model.json`` beside ``weights.pt``: the spec, the task, a typed
graph's schema, the weights' size and CRC-32, checked), with every layer kind of the spec
(docs/models.md): sage (mean, sum, max), gcn, gat, gatv2, gin, rgcn, rgat, normalisation,
residuals, encoders, jumping knowledge and heads. A weights file from before cards is read off
its names (sage, gcn and gat). The layers compute what shardgnn's full-neighbourhood inference
computes (model/convs.hpp, model/relational.hpp):

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

The model (``Gnn``): the encoder, layers ``conv0 .. conv{L-1}`` (each: convolution, heads joined,
norm, activation, residual), jumping knowledge, the head. Dropout only acts in training, so
inference has none. Messages go from the neighbours ``indices[indptr[v]:indptr[v+1]]`` of a
node ``v`` to ``v``. A typed graph's types without features need their learnt rows, which live in
the run folder's per-rank embedding files: this module does not read them.

Standard PyTorch and numpy only. As a program it scores a dataset folder::

    python3 shardgnn_model.py RUN_DIR/weights.pt DATASET_DIR [--out predictions.npy] [--layer N]

printing the test accuracy (with labels and a test split) and writing the logits or embeddings.
"""

import argparse
import json
import os
import sys
import zlib

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


class Graph:
    """A graph's CSR (``indptr``, ``indices``) as edge lists, messages from ``src`` to ``dst`` (a
    node's row lists the neighbours it receives from). A typed graph also takes its ``node_types``
    and ``relations`` (meta.json's): the entry u in v's row is of the relation from v's type to u's,
    or, where the graph stores them (``edge_relations``, aligned with ``indices``), its own."""

    def __init__(self, indptr, indices, node_types=None, relations=None, edge_relations=None):
        # Copies: a dataset's arrays are read-only memory maps, which torch will not wrap.
        indptr = torch.from_numpy(np.array(indptr, dtype=np.int64))
        self.src = torch.from_numpy(np.array(indices, dtype=np.int64))
        self.num_nodes = indptr.numel() - 1
        self.degree = (indptr[1:] - indptr[:-1]).to(torch.float32)
        self.dst = torch.repeat_interleave(torch.arange(self.num_nodes), indptr[1:] - indptr[:-1])
        self.rel = None
        if node_types:
            # Two relations may join one pair of types: then only the stored ids tell them apart.
            if edge_relations is not None:
                self.rel = torch.from_numpy(np.array(edge_relations, dtype=np.int64))
            else:
                names = [t["name"] for t in node_types]
                counts = torch.tensor([t["count"] for t in node_types])
                ntype = torch.repeat_interleave(torch.arange(len(names)), counts)
                pair = torch.full((len(names), len(names)), -1, dtype=torch.int64)
                for r, rel in enumerate(relations):
                    pair[names.index(rel["src"]), names.index(rel["dst"])] = r
                self.rel = pair[ntype[self.dst], ntype[self.src]]
            self._parts = {}

    def relation(self, r):
        """The subgraph of relation r's entries, over the same nodes."""
        if r not in self._parts:
            keep = self.rel == r
            sub = Graph.__new__(Graph)
            sub.src, sub.dst, sub.num_nodes, sub.rel = self.src[keep], self.dst[keep], self.num_nodes, None
            sub.degree = torch.zeros(self.num_nodes).index_add_(0, sub.dst, torch.ones(sub.dst.numel()))
            self._parts[r] = sub
        return self._parts[r]

    def sum_neighbours(self, h, weight=None):
        """out[v] = sum over v's neighbours u of weight_uv * h[u]."""
        msgs = h.index_select(0, self.src)
        if weight is not None:
            msgs = msgs * weight.view(-1, *([1] * (h.dim() - 1)))
        return torch.zeros((self.num_nodes,) + tuple(h.shape[1:]), dtype=h.dtype).index_add_(0, self.dst, msgs)


ACTIVATIONS = {
    "none": lambda h: h,
    "relu": F.relu,
    "elu": F.elu,
    "leaky_relu": lambda h: F.leaky_relu(h, 0.01),
    "gelu": F.gelu,
    "tanh": torch.tanh,
}


def softmax_by_dst(e, dst, n):
    """Softmax of per-edge scores e [E, heads] over the edges of each destination (of n)."""
    top = torch.full((n, e.shape[1]), float("-inf")).scatter_reduce(0, dst.unsqueeze(1).expand_as(e), e, reduce="amax")
    ex = torch.exp(e - top[dst])
    return ex / torch.zeros(n, e.shape[1]).index_add_(0, dst, ex)[dst]


class SAGEConv(nn.Module):
    def __init__(self, in_feats, out_feats, aggregation="mean"):
        super().__init__()
        self.aggregation = aggregation
        self.fc_self = nn.Linear(in_feats, out_feats, bias=True)
        self.fc_neigh = nn.Linear(in_feats, out_feats, bias=False)

    def forward(self, g, h):
        if self.aggregation == "max":  # 0 for a node without neighbours
            agg = torch.zeros_like(h).index_reduce_(0, g.dst, h[g.src], "amax", include_self=False)
        else:
            agg = g.sum_neighbours(h)
            if self.aggregation == "mean":
                agg = agg / g.degree.clamp(min=1).unsqueeze(1)
        return self.fc_self(h) + self.fc_neigh(agg)


class GraphConv(nn.Module):
    def __init__(self, in_feats, out_feats, self_loop=True):
        super().__init__()
        self.loop = 1.0 if self_loop else 0.0
        self.fc = nn.Linear(in_feats, out_feats, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_feats))

    def forward(self, g, h):
        norm = (g.degree + self.loop).clamp(min=1).rsqrt().unsqueeze(1)  # the self-loop counts in the degree
        x = self.fc(h) * norm
        return (g.sum_neighbours(x) + self.loop * x) * norm + self.bias


def with_loops(g, self_loop):
    if not self_loop:
        return g.src, g.dst
    loops = torch.arange(g.num_nodes)
    return torch.cat([g.src, loops]), torch.cat([g.dst, loops])


class GATConv(nn.Module):
    def __init__(self, in_feats, out_feats, heads, self_loop=True, bias=True):
        super().__init__()
        self.heads, self.out_feats, self.self_loop = heads, out_feats, self_loop
        self.fc = nn.Linear(in_feats, out_feats * heads, bias=False)
        self.attn_l = nn.Parameter(torch.zeros(1, heads, out_feats))
        self.attn_r = nn.Parameter(torch.zeros(1, heads, out_feats))
        self.bias = nn.Parameter(torch.zeros(heads, out_feats)) if bias else None

    def forward(self, g, h):
        n = g.num_nodes
        z = self.fc(h).view(n, self.heads, self.out_feats)
        el, er = (z * self.attn_l).sum(-1), (z * self.attn_r).sum(-1)  # [n, heads]
        src, dst = with_loops(g, self.self_loop)
        alpha = softmax_by_dst(F.leaky_relu(el[src] + er[dst], 0.2), dst, n)
        out = torch.zeros(n, self.heads, self.out_feats).index_add_(0, dst, z[src] * alpha.unsqueeze(-1))
        return out if self.bias is None else out + self.bias


class GATv2Conv(nn.Module):
    def __init__(self, in_feats, out_feats, heads, self_loop=True):
        super().__init__()
        self.heads, self.out_feats, self.self_loop = heads, out_feats, self_loop
        self.fc_src = nn.Linear(in_feats, out_feats * heads, bias=False)
        self.fc_dst = nn.Linear(in_feats, out_feats * heads, bias=False)
        self.attn = nn.Parameter(torch.zeros(1, heads, out_feats))
        self.bias = nn.Parameter(torch.zeros(heads, out_feats))

    def forward(self, g, h):
        n = g.num_nodes
        xs = self.fc_src(h).view(n, self.heads, self.out_feats)
        xd = self.fc_dst(h).view(n, self.heads, self.out_feats)
        src, dst = with_loops(g, self.self_loop)
        alpha = softmax_by_dst((F.leaky_relu(xs[src] + xd[dst], 0.2) * self.attn).sum(-1), dst, n)
        return torch.zeros(n, self.heads, self.out_feats).index_add_(0, dst, xs[src] * alpha.unsqueeze(-1)) + self.bias


class GINConv(nn.Module):
    def __init__(self, in_feats, out_feats, mlp_layers=2, train_eps=True):
        super().__init__()
        self.mlp_layers = mlp_layers
        for i in range(mlp_layers):
            self.add_module(f"mlp{i}", nn.Linear(in_feats if i == 0 else out_feats, out_feats))
        if train_eps:
            self.eps = nn.Parameter(torch.zeros(1))
        else:
            self.register_buffer("eps", torch.zeros(1))

    def forward(self, g, h):
        x = g.sum_neighbours(h) + (1 + self.eps) * h
        for i in range(self.mlp_layers):
            x = getattr(self, f"mlp{i}")(x)
            if i + 1 < self.mlp_layers:
                x = F.relu(x)
        return x


class RelGraphConv(nn.Module):
    """R-GCN: h_v W_0 + b + sum_r mean_{u in N_r(v)} h_u W_r (W_r = sum_b a_rb V_b with bases)."""

    def __init__(self, in_feats, out_feats, relations, bases=0):
        super().__init__()
        self.relations, self.bases = relations, bases
        if bases > 0:
            self.basis = nn.Parameter(torch.zeros(bases, in_feats, out_feats))
            self.coefficients = nn.Parameter(torch.zeros(relations, bases))
        else:
            self.weight = nn.Parameter(torch.zeros(relations, in_feats, out_feats))
        self.loop_weight = nn.Parameter(torch.zeros(in_feats, out_feats))
        self.bias = nn.Parameter(torch.zeros(out_feats))

    def forward(self, g, h):
        w = (self.coefficients @ self.basis.flatten(1)).view(self.relations, *self.basis.shape[1:]) if self.bases > 0 else self.weight
        out = h @ self.loop_weight + self.bias
        for r in range(self.relations):
            sub = g.relation(r)
            if sub.src.numel() > 0:
                out = out + (sub.sum_neighbours(h) / sub.degree.clamp(min=1).unsqueeze(1)) @ w[r]
        return out


class RelGATConv(nn.Module):
    """R-GAT (MLPerf's reference): a GAT per relation (no self-loops, no bias), summed, plus h_v W_0 + b."""

    def __init__(self, in_feats, out_feats, heads, relations):
        super().__init__()
        self.heads, self.out_feats, self.relations = heads, out_feats, relations
        for r in range(relations):
            self.add_module(f"relation{r}", GATConv(in_feats, out_feats, heads, self_loop=False, bias=False))
        self.self_fc = nn.Linear(in_feats, out_feats * heads, bias=False)
        self.bias = nn.Parameter(torch.zeros(heads, out_feats))

    def forward(self, g, h):
        out = self.self_fc(h).view(-1, self.heads, self.out_feats) + self.bias
        for r in range(self.relations):
            sub = g.relation(r)
            if sub.src.numel() > 0:
                out = out + getattr(self, f"relation{r}")(sub, h)
        return out


class PairScorer(nn.Module):
    """A link model's MLP scorer over h_u * h_v, or DistMult's diagonal per relation (loaded with the
    weights; the rows are the output, and score(hu, hv) scores pairs as training did)."""

    def __init__(self, width, kind="mlp"):
        super().__init__()
        self.kind = kind
        if kind == "mlp":
            self.fc1, self.fc2 = nn.Linear(width, width), nn.Linear(width, 1)
        else:
            self.relation = nn.Parameter(torch.ones(1, width))

    def score(self, hu, hv):
        if self.kind == "mlp":
            return self.fc2(torch.relu(self.fc1(hu * hv))).squeeze(1)
        return (hu * self.relation[0] * hv).sum(1)


def make_layer(spec, in_feats, relations):
    kind, width = spec["kind"], spec["width"]
    heads = spec.get("heads", 1)
    per_head = width // heads if spec.get("concat", True) else width
    if kind == "sage":
        return SAGEConv(in_feats, width, spec.get("aggregation", "mean"))
    if kind == "gcn":
        return GraphConv(in_feats, width, spec.get("self_loop", True))
    if kind == "gat":
        return GATConv(in_feats, per_head, heads, spec.get("self_loop", True))
    if kind == "gatv2":
        return GATv2Conv(in_feats, per_head, heads, spec.get("self_loop", True))
    if kind == "gin":
        return GINConv(in_feats, width, spec.get("mlp_layers", 2), spec.get("train_eps", True))
    if kind == "rgcn":
        return RelGraphConv(in_feats, width, relations, spec.get("bases", 0))
    if kind == "rgat":
        return RelGATConv(in_feats, per_head, heads, relations)
    raise ValueError(f"layer kind {kind!r}: expected sage, gcn, gat, gatv2, gin, rgcn or rgat")


class Gnn(nn.Module):
    """The model a model card (model.json) describes: encoder, layers, jumping knowledge, head."""

    def __init__(self, card):
        super().__init__()
        self.card = card
        spec = card["spec"]
        self.spec, self.layers = spec, len(spec["layers"])
        graph = card.get("graph", {})
        self.types = graph.get("node_types", [])
        relations = len(graph.get("relations", []))
        encoder = spec.get("encoder")
        if self.types:
            for t, nt in enumerate(self.types):
                if nt["feature_dim"] > 0:
                    self.add_module(f"encoder{t}", nn.Linear(nt["feature_dim"], encoder["width"]))
        elif encoder:
            self.add_module("encoder", nn.Linear(card["in"], encoder["width"]))
        width = encoder["width"] if encoder else card["in"]
        in_widths = []
        for l, ls in enumerate(spec["layers"]):
            in_widths.append(width)
            self.add_module(f"conv{l}", make_layer(ls, width, relations))
            width = ls["width"]
        for l, ls in enumerate(spec["layers"]):
            if ls.get("norm", "none") == "batch":
                self.add_module(f"norm{l}", nn.BatchNorm1d(ls["width"]))
            elif ls.get("norm", "none") == "layer":
                self.add_module(f"norm{l}", nn.LayerNorm(ls["width"]))
            if ls.get("residual", "none") == "add" and in_widths[l] != ls["width"]:
                self.add_module(f"residual{l}", nn.Linear(in_widths[l], ls["width"], bias=False))
        jk = spec.get("jumping_knowledge", "none")
        rw = sum(ls["width"] for ls in spec["layers"]) if jk == "cat" else spec["layers"][-1]["width"]
        head = spec.get("head", {"kind": "none"})
        self.heads_n = 0
        if head["kind"] == "linear":
            self.add_module("head0", nn.Linear(rw, card["out"]))
            self.heads_n = 1
        elif head["kind"] == "mlp":
            self.heads_n = head["layers"]
            for i in range(head["layers"]):
                self.add_module(f"head{i}", nn.Linear(rw if i == 0 else head["width"], card["out"] if i + 1 == head["layers"] else head["width"]))
        if card.get("task", {}).get("scorer") in ("mlp", "distmult"):
            self.scorer = PairScorer(card["out"], card["task"]["scorer"])

    @classmethod
    def from_weights(cls, path):
        """The model of a weights file: from its card (model.json beside weights.pt, else
        <name>.model.json), its size and CRC-32 checked; without one, read off the names (sage,
        gcn and gat only, as files from before cards)."""
        folder, name = os.path.split(path)
        card_path = os.path.join(folder, "model.json" if name == "weights.pt" else (name[:-3] if name.endswith(".pt") else name) + ".model.json")
        if not os.path.exists(card_path):
            return legacy_model(path)
        with open(card_path) as f:
            card = json.load(f)
        if card.get("format") != "shardgnn-model-card" or card.get("version") != 1:
            raise ValueError(f"{card_path}: not a version-1 shardgnn model card")
        with open(path, "rb") as f:
            data = f.read()
        if len(data) != card["weights"]["bytes"] or "%08x" % zlib.crc32(data) != card["weights"]["crc32"]:
            raise ValueError(f"{path}: does not match its model card {card_path} (size or CRC-32)")
        model = cls(card)
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True), strict=True)
        return model.eval()

    def encode(self, g, x):
        """The first layer's rows: per type through its encoder on a typed graph (x: {type: rows})."""
        if not self.types:
            return self.encoder(x) if hasattr(self, "encoder") else x
        rows = []
        for t, nt in enumerate(self.types):
            if nt["feature_dim"] == 0:
                raise ValueError(f"node type {nt['name']!r} has no features: its learnt rows live in the run folder's embedding files, which this module does not read")
            rows.append(getattr(self, f"encoder{t}")(x[nt["name"]]))
        return torch.cat(rows)

    def forward(self, g, x, layer=None):
        """The outputs [n, out]; with ``layer``, also the rows after that many layers (0: the encoded input)."""
        if layer is not None and not 0 <= layer <= self.layers:
            raise ValueError(f"layer {layer}: the model has {self.layers} layers (0 = the input features)")
        h = self.encode(g, x)
        kept, outs = (h if layer == 0 else None), []
        for l, ls in enumerate(self.spec["layers"]):
            y = getattr(self, f"conv{l}")(g, h)
            if y.dim() == 3:
                y = y.flatten(1) if ls.get("concat", True) else y.mean(1)
            if hasattr(self, f"norm{l}"):
                y = getattr(self, f"norm{l}")(y)
            y = ACTIVATIONS[ls.get("activation", "relu")](y)
            if ls.get("residual", "none") == "add":
                y = y + (getattr(self, f"residual{l}")(h) if hasattr(self, f"residual{l}") else h)
            h = y
            outs.append(h)
            if layer == l + 1:
                kept = h
        jk = self.spec.get("jumping_knowledge", "none")
        z = torch.cat(outs, 1) if jk == "cat" else torch.stack(outs).amax(0) if jk == "max" else h
        head = self.spec.get("head", {"kind": "none"})
        for i in range(self.heads_n):
            z = getattr(self, f"head{i}")(z)
            if i + 1 < self.heads_n:
                z = ACTIVATIONS[head.get("activation", "relu")](z)
        return (z, kept) if layer is not None else z


def legacy_model(path):
    """A weights file from before model cards: sage, gcn or gat read off the names and shapes."""
    w = torch.load(path, map_location="cpu", weights_only=True)
    if "conv0.fc_self.weight" in w:
        kind, name = "sage", "fc_self.weight"
    elif "conv0.attn_l" in w:
        kind, name = "gat", "fc.weight"
    elif "conv0.fc.weight" in w:
        kind, name = "gcn", "fc.weight"
    else:
        raise ValueError(f"{path}: no model card and no first layer (conv0.fc_self.weight, conv0.attn_l or conv0.fc.weight)")
    layers = 0
    while f"conv{layers}.{name}" in w:
        layers += 1
    heads = w["conv0.attn_l"].shape[1] if kind == "gat" else 1
    specs = []
    for l in range(layers):
        last = l + 1 == layers
        width = w[f"conv{l}.attn_l"].shape[2] if kind == "gat" and last else w[f"conv{l}.{name}"].shape[0]
        ls = {"kind": kind, "width": width, "activation": "none" if last else ("elu" if kind == "gat" else "relu")}
        if kind == "gat":
            ls.update(heads=heads, concat=not last)
        specs.append(ls)
    card = {"spec": {"name": kind, "layers": specs}, "in": w[f"conv0.{name}"].shape[1], "out": specs[-1]["width"], "graph": {}}
    model = Gnn(card)
    model.load_state_dict(w, strict=True)
    return model.eval()


def load_dataset(folder):
    """A shardgnn dataset folder's arrays, memory-mapped: {name: numpy array} from meta.json.
    bfloat16 features (stored as uint16, the top half of float32) come back as float32."""
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    d = {name: np.load(os.path.join(folder, a["file"]), mmap_mode="r") for name, a in meta["arrays"].items()}
    if meta.get("feature_dtype") == "bfloat16" and "features" in d:
        d["features"] = (d["features"].astype(np.uint32) << 16).view(np.float32)
    return d


def load_inputs(folder):
    """A dataset folder's graph, input rows ({type: rows} for a typed graph) and arrays."""
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    d = load_dataset(folder)
    types = meta.get("node_types")
    g = Graph(d["indptr"], d["indices"], types, meta.get("relations"), d.get("edge_relations"))
    if types:
        x = {t["name"]: torch.from_numpy(np.array(d["features_" + t["name"]], dtype=np.float32)) for t in types if t["feature_dim"] > 0}
    else:
        x = torch.from_numpy(np.array(d["features"], dtype=np.float32)) if "features" in d else torch.zeros(g.num_nodes, 0)
    return g, x, d


def main(argv=None):
    p = argparse.ArgumentParser(description="Score a shardgnn dataset folder with a trained weights.pt (and its model.json) in plain PyTorch.")
    p.add_argument("weights")
    p.add_argument("dataset")
    p.add_argument("--out", help="write the outputs (or, with --layer, that layer's rows) here as .npy")
    p.add_argument("--layer", type=int, help="the rows after this many layers (0 = the encoded input)")
    a = p.parse_args(argv)
    model = Gnn.from_weights(a.weights)
    g, x, d = load_inputs(a.dataset)
    with torch.no_grad():
        if a.layer is None:
            logits, rows = model(g, x), None
        else:
            logits, rows = model(g, x, layer=a.layer)
    if "labels" in d and "test_idx" in d and len(d["test_idx"]) > 0 and d["labels"].ndim == 1:
        test = torch.from_numpy(np.array(d["test_idx"], dtype=np.int64))
        labels = torch.from_numpy(np.array(d["labels"], dtype=np.int64))[test]
        known = labels >= 0
        acc = (logits[test].argmax(1)[known] == labels[known]).float().mean().item()
        print(f"test accuracy {acc:.4f} ({int(known.sum())} nodes), {model.spec['name']}, {model.layers} layers")
    if a.out:
        np.save(a.out, (logits if rows is None else rows).numpy())
    return 0


if __name__ == "__main__":
    sys.exit(main())
