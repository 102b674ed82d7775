"""docs/model.md's mapping of a shardgnn weights.pt onto DGL's and PyG's layers, executed: loads the
weights into DGL's SAGEConv/GraphConv/GATConv and PyG's SAGEConv/GCNConv/GATConv as the table says,
runs each on a dataset folder's whole graph, and prints the largest difference from the logits of
`shardgnn predict --layer <depth>` (its embeddings.npy). Needs a Python with DGL and PyG (a peers
venv: scripts/peers.sh, then pip install torch_geometric).

    python peer_mapping.py MODEL(sage|gcn|gat) WEIGHTS DATASET_DIR PREDICT_DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


# The peers' reader of dataset folders (any format version, id width and feature storage).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
from dataset_input import Dataset, check_input_main  # noqa: E402


def read_input(dataset):
    d = Dataset(dataset)
    indptr, indices = d.csr()
    return {"indptr": indptr, "indices": indices, "features": d.features()}


def main(kind, weights, dataset, predicted):
    w = torch.load(weights, map_location="cpu", weights_only=True)
    inp = check_input_main("peer_mapping", lambda: read_input(dataset))
    indptr, indices = torch.from_numpy(inp["indptr"]), torch.from_numpy(inp["indices"])
    n = indptr.numel() - 1
    dst = torch.repeat_interleave(torch.arange(n), indptr[1:] - indptr[:-1])
    src = indices
    x = torch.from_numpy(inp["features"])
    layers = len({k.split(".")[0] for k in w if k.startswith("conv")})
    want = np.load(os.path.join(predicted, "embeddings.npy"))
    out = {}

    def stack(step):
        """The layers one after the other: step(prefix, rows, last) is one layer with its activation."""
        h = x
        with torch.no_grad():
            for l in range(layers):
                h = step(f"conv{l}.", h, l + 1 == layers)
        return h.numpy()

    def act(h, last):
        return h if last else F.relu(h)

    def gat_shape(p):
        return w[p + "attn_l"].shape[1], w[p + "attn_l"].shape[2]  # heads, width per head

    import dgl
    import dgl.nn as dglnn
    g = dgl.graph((src, dst), num_nodes=n)
    gl = dgl.add_self_loop(g)

    def dgl_step(p, h, last):
        if kind == "sage":
            conv = dglnn.SAGEConv(h.shape[1], w[p + "fc_self.weight"].shape[0], "mean")
            conv.fc_self.weight.copy_(w[p + "fc_self.weight"])
            conv.fc_self.bias.copy_(w[p + "fc_self.bias"])
            conv.fc_neigh.weight.copy_(w[p + "fc_neigh.weight"])
            return act(conv(g, h), last)
        if kind == "gcn":
            conv = dglnn.GraphConv(h.shape[1], w[p + "fc.weight"].shape[0], norm="both")
            conv.weight.copy_(w[p + "fc.weight"].T)
            conv.bias.copy_(w[p + "bias"])
            return act(conv(gl, h), last)
        heads, dim = gat_shape(p)
        conv = dglnn.GATConv(h.shape[1], dim, heads, allow_zero_in_degree=True)
        conv.fc.weight.copy_(w[p + "fc.weight"])
        conv.attn_l.copy_(w[p + "attn_l"])
        conv.attn_r.copy_(w[p + "attn_r"])
        conv.bias.copy_(w[p + "bias"].flatten())
        h = conv(gl, h)
        return h.mean(1) if last else F.elu(h.flatten(1))

    out["DGL"] = stack(dgl_step)

    import torch_geometric.nn as pyg
    edge_index = torch.stack([src, dst])

    def pyg_step(p, h, last):
        if kind == "sage":
            conv = pyg.SAGEConv(h.shape[1], w[p + "fc_self.weight"].shape[0])
            conv.lin_l.weight.copy_(w[p + "fc_neigh.weight"])
            conv.lin_l.bias.copy_(w[p + "fc_self.bias"])
            conv.lin_r.weight.copy_(w[p + "fc_self.weight"])
            return act(conv(h, edge_index), last)
        if kind == "gcn":
            conv = pyg.GCNConv(h.shape[1], w[p + "fc.weight"].shape[0])
            conv.lin.weight.copy_(w[p + "fc.weight"])
            conv.bias.copy_(w[p + "bias"])
            return act(conv(h, edge_index), last)
        heads, dim = gat_shape(p)
        conv = pyg.GATConv(h.shape[1], dim, heads, concat=not last)
        lin = conv.lin if getattr(conv, "lin", None) is not None else conv.lin_src
        lin.weight.copy_(w[p + "fc.weight"])
        conv.att_src.copy_(w[p + "attn_l"])
        conv.att_dst.copy_(w[p + "attn_r"])
        conv.bias.copy_(w[p + "bias"].mean(0) if last else w[p + "bias"].flatten())
        h = conv(h, edge_index)
        return h if last else F.elu(h)

    out["PyG"] = stack(pyg_step)

    for lib, rows in out.items():
        print(f"{kind} {lib}: max |difference| from shardgnn predict's logits {np.abs(rows - want).max():.2e} over {want.shape}, "
              f"same classes {(rows.argmax(1) == want.argmax(1)).mean() * 100:.2f}%")


if __name__ == "__main__":
    main(*sys.argv[1:5])
