"""Node classification on a typed graph (several node types and relations) with PyG's HeteroConv,
trained over a shardgnn partition; gradients averaged with sg.allreduce_.

    shardgnn data generate hetero --papers 2000 --feature-dim 16 --featureless institute --out het
    shardgnn partition het --parts 2 --balance ntypes,train --out het2
    mpiexec -n 2 python hetero.py het2 [--epochs 10] [--seed 0] [--checkpoint-dir DIR]

Each batch comes as a HeteroData (batch.to_pyg()): per node type its nodes' features `x`, or for a
type stored without features its nodes' ids in the type's own numbering (`type_ids`), which index
a learnable nn.Embedding table here (every rank holds the whole table; its gradients are averaged
as the others'); per edge type `(src, relation, dst)` the batch's sampled edges, a message from a
neighbour of type src to a node of type dst. The seeds, the first `batch_size` nodes of their type,
are what is classified (the generator's papers).

The model: each type's rows encoded to the hidden width (a Linear per featured type, the embedding
for a featureless one), then per layer, for each node type, a Linear of its own row plus the sum
over relations of a mean-aggregating SAGEConv (root_weight=False) from the relation's source type.
The self term gives every type an output in every layer, also a type that no edge of the batch
reaches. Validation after each epoch, the best epoch's model scored on the test seeds (sampled
neighbourhoods, as shardgnn train scores typed graphs): the last line is `test accuracy 0.6050`.

A stop signal ends the run after the step in progress, saving the model, the optimiser and the
loader's position to --checkpoint-dir, with exit status 75; the same command resumes.
"""
import argparse
import copy
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import HeteroConv, SAGEConv

import shardgnn as sg


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("partition", help="a partition of a typed dataset (data generate hetero, or a converted one)")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-dir", default="")
    p.add_argument("--fanouts", default="10,5", help="neighbours per hop along each relation")
    p.add_argument("--batch", type=int, default=128, help="seeds per batch per rank")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--lr", type=float, default=0.005)
    return p.parse_args()


def edge_types(part):
    """The edge types a batch can hold: the schema's relations, and for a relation stored one way
    only, its reverse (to_hetero names it rev_<relation>)."""
    types = list(part.relations)
    pairs = {(s, d) for s, _, d in types}
    types += [(d, "rev_" + r, s) for s, r, d in part.relations if (d, s) not in pairs]
    return types


class HeteroSAGE(torch.nn.Module):
    def __init__(self, node_types, relations, hidden, classes, layers, dropout):
        super().__init__()
        self.dropout = dropout
        self.encoders = torch.nn.ModuleDict({
            name: torch.nn.Linear(width, hidden) if width > 0 else torch.nn.Embedding(count, hidden)
            for name, count, width in node_types})
        dims = [hidden] * layers + [classes]
        self.convs = torch.nn.ModuleList(
            HeteroConv({rel: SAGEConv(a, b, root_weight=False) for rel in relations}, aggr="sum") for a, b in zip(dims[:-1], dims[1:]))
        self.selfs = torch.nn.ModuleList(
            torch.nn.ModuleDict({name: torch.nn.Linear(a, b) for name, _, _ in node_types}) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, data):
        h = {t: self.encoders[t](data[t].x if "x" in data[t] else data[t].type_ids) for t in data.node_types}
        for i, (conv, selfs) in enumerate(zip(self.convs, self.selfs)):
            h = {t: F.dropout(v, self.dropout, self.training) for t, v in h.items()}
            messages = conv(h, data.edge_index_dict)  # only the types some edge of the batch reaches
            h = {t: selfs[t](v) + messages[t] if t in messages else selfs[t](v) for t, v in h.items()}
            if i + 1 < len(self.convs):
                h = {t: F.relu(v) for t, v in h.items()}
        return h


def seed_type(part, batch):
    return part.node_types[int(batch.node_type[0])][0]


@torch.no_grad()
def accuracy(model, part, loader):
    model.eval()
    correct_total = np.zeros(2)
    for batch in loader:
        if batch.batch_size:
            data, t = batch.to_pyg(), seed_type(part, batch)
            y = data[t].y
            pred = model(data)[t][: batch.batch_size].argmax(1)
            correct_total += [(pred == y).sum().item(), (y >= 0).sum().item()]
    sg.allreduce_(correct_total)
    return float(correct_total[0] / max(correct_total[1], 1))


def main():
    args = parse_args()
    sg.init()
    sg.catch_stop_signals()
    rank, world = sg.rank(), sg.size()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    log = print if rank == 0 else (lambda *a, **k: None)

    part = sg.Partition(args.partition)
    if not part.node_types:
        sys.exit(f"{args.partition}: one node type; this example is for typed graphs (see sage_pyg_ddp.py)")
    fanouts = [int(f) for f in args.fanouts.split(",")]
    loader = sg.NeighborLoader(part, fanouts, args.batch, split="train", seed=args.seed)
    val_loader = sg.NeighborLoader(part, fanouts, args.batch, split="val", shuffle=False, seed=args.seed)
    test_loader = sg.NeighborLoader(part, fanouts, args.batch, split="test", shuffle=False, seed=args.seed)

    torch.manual_seed(args.seed)  # the same initial weights (and embedding rows) on every rank
    model = HeteroSAGE(part.node_types, edge_types(part), args.hidden, part.num_classes, len(fanouts), args.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    log(f"node types {[t[0] for t in part.node_types]}, {len(edge_types(part))} edge types, {sum(p.numel() for p in model.parameters())} parameters")

    ckpt = sg.Checkpoint(args.checkpoint_dir)
    state = {"best_val": -1.0, "best_epoch": -1, "best_model": None, "epoch_sums": [0.0, 0.0]}
    saved = ckpt.load()  # collective: every rank resumes, or none
    if saved is not None:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])
        state = saved["state"]
        log(f"resuming {args.checkpoint_dir} at epoch {loader.epoch + 1}, step {loader.step + 1}", flush=True)

    def stop_here():
        if not sg.stop_requested():
            return
        ckpt.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "loader": loader.state_dict(), "state": state})
        where = f"epoch {loader.epoch}" if loader.step == 0 else f"step {loader.step} of epoch {loader.epoch + 1}"
        log(f"stopped after {where}; " + ("the same command resumes" if ckpt.path else "no --checkpoint-dir, nothing saved"), flush=True)
        sg.exit_resumable()

    while loader.epoch < args.epochs:
        epoch = loader.epoch
        model.train()
        for batch in loader:
            torch.manual_seed(int(np.random.SeedSequence([args.seed, rank, epoch, loader.step]).generate_state(1)[0]))
            count = np.array([0.0])
            opt.zero_grad()
            if batch.batch_size:
                data, t = batch.to_pyg(), seed_type(part, batch)
                y = data[t].y
                count[0] = (y >= 0).sum().item()
                loss_sum = F.cross_entropy(model(data)[t][: batch.batch_size], y, ignore_index=-1, reduction="sum")
                loss_sum.backward()
                state["epoch_sums"][0] += loss_sum.item()
                state["epoch_sums"][1] += float(count[0])
            # The mean loss over every rank's seeds: each rank's gradient of its sum, summed over the
            # ranks, over the seeds' total. An edge type absent from this rank's batch has no
            # gradient here (zeros), but may have one elsewhere: every parameter is all-reduced.
            sg.allreduce_(count)
            for p in model.parameters():
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                sg.allreduce_(p.grad, "sum")
                p.grad /= max(count[0], 1.0)
            if count[0] > 0:
                opt.step()
            stop_here()
        sums = np.array(state["epoch_sums"])
        sg.allreduce_(sums)
        state["epoch_sums"] = [0.0, 0.0]
        val_loader.set_epoch(0)
        val = accuracy(model, part, val_loader)
        if val > state["best_val"]:
            state.update(best_val=val, best_epoch=epoch, best_model=copy.deepcopy(model.state_dict()))
        log(f"epoch {epoch + 1}/{args.epochs}  loss {sums[0] / max(sums[1], 1):.4f}  val acc {val:.4f}", flush=True)
        stop_here()

    model.load_state_dict(state["best_model"])
    log(f"best validation accuracy {state['best_val']:.4f} at epoch {state['best_epoch'] + 1}")
    log(f"test accuracy {accuracy(model, part, test_loader):.4f}", flush=True)


if __name__ == "__main__":
    main()
