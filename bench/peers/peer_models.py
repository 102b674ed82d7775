"""The models the DGL peers train (`dgl_train.py`, `distdgl_train.py`): layers of width `hidden`,
ReLU between them, dropout on every layer's input, as shardgnn's `--model sage` (mean-aggregator
SAGEConv) and `--model gcn` (GraphConv, norm='both', which on a sampled block counts degrees
within the block). Benchmark-only; imports torch and DGL when called."""


def add_training_args(ap, fanouts, batch_help):
    """The one-process peers' shared options (dgl_train.py, dgl_link.py): the dataset, the result
    file, and the model and optimiser settings shardgnn's run is given."""
    ap.add_argument("dataset")
    ap.add_argument("--result", help="write the result (one JSON object) here (required unless --check-input)")
    ap.add_argument("--check-input", action="store_true", help="read and check the dataset, print what was read, stop (no DGL)")
    ap.add_argument("--fanouts", default=fanouts, help="DGL order: input layer first")
    ap.add_argument("--batch", type=int, default=1024, help=batch_help)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)


def timed_epochs(model, opt, loader, epochs, loss_of):
    """Trains `epochs` epochs over `loader`, each batch's loss from loss_of(batch); returns each
    epoch's seconds and the first epoch's mean loss."""
    import time

    epoch_times, first_loss = [], None
    for _ in range(epochs):
        model.train()
        t0 = time.perf_counter()
        loss_sum, steps = 0.0, 0
        for batch in loader:
            loss = loss_of(batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum, steps = loss_sum + float(loss), steps + 1
        epoch_times.append(time.perf_counter() - t0)
        if first_loss is None:
            first_loss = loss_sum / max(steps, 1)
    return epoch_times, first_loss


def make_sage(in_dim, hidden, classes, layers, dropout):
    from dgl.nn import SAGEConv

    return _stack(lambda i, o: SAGEConv(i, o, "mean"), in_dim, hidden, classes, layers, dropout)


def make_gcn(in_dim, hidden, classes, layers, dropout):
    from dgl.nn import GraphConv

    return _stack(lambda i, o: GraphConv(i, o, norm="both", allow_zero_in_degree=True), in_dim, hidden, classes, layers, dropout)


def _stack(make_layer, in_dim, hidden, classes, layers, dropout):
    import torch.nn as nn
    import torch.nn.functional as F

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            dims = [in_dim] + [hidden] * (layers - 1) + [classes]
            self.layers = nn.ModuleList(make_layer(dims[i], dims[i + 1]) for i in range(layers))
            self.drop = nn.Dropout(dropout)

        def forward(self, blocks, x):
            for i, (layer, block) in enumerate(zip(self.layers, blocks)):
                x = layer(block, self.drop(x))
                if i + 1 < len(self.layers):
                    x = F.relu(x)
            return x

    return Stack()
