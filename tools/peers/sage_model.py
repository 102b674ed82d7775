"""The GraphSAGE model both DGL peers train (`dgl_train.py`, `distdgl_train.py`): mean-aggregator
SAGEConv layers of width `hidden`, ReLU between them, dropout on every layer's input, as shardgnn's
`--model sage`. Benchmark-only; imports torch and DGL when called."""


def make_sage(in_dim, hidden, classes, layers, dropout):
    import torch.nn as nn
    import torch.nn.functional as F
    from dgl.nn import SAGEConv

    class SAGE(nn.Module):
        def __init__(self):
            super().__init__()
            dims = [in_dim] + [hidden] * (layers - 1) + [classes]
            self.layers = nn.ModuleList(SAGEConv(dims[i], dims[i + 1], "mean") for i in range(layers))
            self.drop = nn.Dropout(dropout)

        def forward(self, blocks, x):
            for i, (layer, block) in enumerate(zip(self.layers, blocks)):
                x = layer(block, self.drop(x))
                if i + 1 < len(self.layers):
                    x = F.relu(x)
            return x

    return SAGE()
