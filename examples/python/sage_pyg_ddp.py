"""GraphSAGE in PyG, trained over a shardgnn partition with torch DistributedDataParallel.

    mpiexec -n 2 python sage_pyg_ddp.py PARTITION [--epochs 20] [--seed 0] [--checkpoint-dir DIR]

Each rank loads its part of the partition; shardgnn samples every batch's neighbourhood across all
ranks and fetches the features from their owners, and DDP averages the gradients (over gloo,
started from MPI by sg.torch_env(): no torchrun). The defaults are `shardgnn train --model sage`'s
(3 layers of width 256, fanouts 15,10,5, 1024 seeds a batch per rank, Adam at 0.01 with weight
decay 5e-4, dropout 0.5 on every layer's input, 20 epochs), and so is the protocol: validation
after every epoch on the same sampled neighbourhoods each time, the epoch with the best validation
accuracy kept, and the test nodes scored by that model over their full neighbourhoods (fanouts -1)
as the last line: `test accuracy 0.7930`.

A stop signal (SIGTERM from scancel or a preemption, SIGUSR1 before the time limit, Ctrl-C) ends
the run after the step in progress on every rank: each saves the model, the optimiser and the
loaders' positions to --checkpoint-dir and exits 75 (EXIT_RESUMABLE). The same command then
resumes from there, drawing the batches and dropout masks the uninterrupted run would have drawn.
"""
import argparse
import copy
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch_geometric.nn import SAGEConv

import shardgnn as sg


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("partition", help="a folder written by `shardgnn partition`")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0, help="seed of the weights, the batches and dropout")
    p.add_argument("--checkpoint-dir", default="", help="where a stopped run saves its state, and a new run resumes from")
    p.add_argument("--fanouts", default="15,10,5", help="neighbours sampled per hop, seeds outward (-1: all); their count is the depth")
    p.add_argument("--batch", type=int, default=1024, help="seeds per batch per rank")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--eval", choices=["sampled", "full"], default="sampled",
                   help="per-epoch validation over the training fanouts or over full neighbourhoods")
    return p.parse_args()


class SAGE(torch.nn.Module):
    """GraphSAGE on a batch's blocks, input layer first: layer h reads the rows of block h's sources
    and writes those of its destinations (the first num_dst sources), as DGL's blocks."""

    def __init__(self, dims, dropout):
        super().__init__()
        self.convs = torch.nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    def reset_parameters(self):
        """As shardgnn's (and DGL's) SAGEConv: Glorot uniform with ReLU's gain, zero bias (PyG's
        default, torch.nn.Linear's, starts several times smaller on wide bag-of-words rows). Drawn
        per layer, the root's weights (lin_r) then the neighbours' (lin_l), as plain_torch.py draws
        its own: from the same seed both start from the same weights."""
        for conv in self.convs:
            torch.nn.init.xavier_uniform_(conv.lin_r.weight, gain=2 ** 0.5)
            torch.nn.init.xavier_uniform_(conv.lin_l.weight, gain=2 ** 0.5)
            torch.nn.init.zeros_(conv.lin_l.bias)

    def forward(self, x, blocks):
        for i, (conv, (edge_index, num_dst)) in enumerate(zip(self.convs, blocks)):
            x = F.dropout(x, self.dropout, self.training)  # on every layer's input, as shardgnn's
            x = conv((x, x[:num_dst]), edge_index, size=(x.shape[0], num_dst))
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x


def tensors(batch):
    """The batch as tensors: features, the seeds' labels, and per layer (edge_index, num_dst)."""
    blocks = [(torch.from_numpy(batch.edge_index(h)), batch.blocks[h][3]) for h in range(batch.num_layers)]
    return torch.from_numpy(batch.x), torch.from_numpy(batch.y), blocks


@torch.no_grad()
def accuracy(model, loader):
    """Accuracy over every rank's seeds of the loader's split (summed over ranks: collective)."""
    model.eval()
    correct_total = np.zeros(2)
    for batch in loader:  # every rank takes every batch, empty or not: sampling is collective
        if batch.batch_size == 0:
            continue
        x, y, blocks = tensors(batch)
        pred = model(x, blocks).argmax(1)
        correct_total += [(pred == y).sum().item(), (y >= 0).sum().item()]
    sg.allreduce_(correct_total)
    return float(correct_total[0] / max(correct_total[1], 1))


def step_seed(*keys):
    """A seed for torch's generator keyed by (seed, rank, epoch, step): a resumed run draws the
    dropout masks the uninterrupted one drew."""
    return int(np.random.SeedSequence(list(keys)).generate_state(1)[0])


def main():
    args = parse_args()
    sg.init()
    sg.catch_stop_signals()
    rank, world = sg.rank(), sg.size()
    sg.torch_env()
    dist.init_process_group("gloo")
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    log = print if rank == 0 else (lambda *a, **k: None)

    part = sg.Partition(args.partition)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    loader = sg.NeighborLoader(part, fanouts, args.batch, split="train", shuffle=True, seed=args.seed)
    # Validation takes the same sampled neighbourhoods every time (set_epoch(0) before each), as
    # shardgnn train keeps its validation batches; the test is over full neighbourhoods.
    val_loader = sg.NeighborLoader(part, fanouts if args.eval == "sampled" else [-1] * len(fanouts), args.batch, split="val", shuffle=False,
                                   seed=args.seed)
    test_loader = sg.NeighborLoader(part, [-1] * len(fanouts), args.batch, split="test", shuffle=False, seed=args.seed)

    model = SAGE([part.feature_dim] + [args.hidden] * (len(fanouts) - 1) + [part.num_classes], args.dropout)
    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    model.reset_parameters()
    ddp = DDP(model)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    # What a stopped run saved: every rank its own file (the loader's position is per rank).
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
        """On a stop signal (any rank's): save where this rank stands and exit 75."""
        if not sg.stop_requested():  # collective: every rank asks after the same step
            return
        ckpt.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "loader": loader.state_dict(), "state": state})
        where = f"epoch {loader.epoch}" if loader.step == 0 else f"step {loader.step} of epoch {loader.epoch + 1}"
        log(f"stopped after {where}; " +
            ("the same command resumes" if ckpt.path else "no --checkpoint-dir, nothing saved"), flush=True)
        dist.destroy_process_group()
        sg.exit_resumable()

    while loader.epoch < args.epochs:
        epoch = loader.epoch
        ddp.train()
        for batch in loader:
            torch.manual_seed(step_seed(args.seed, rank, epoch, loader.step))
            x, y, blocks = tensors(batch)
            # The loss is the mean over every rank's labelled seeds of the step, as shardgnn train's:
            # this rank's sum, scaled so that DDP's average over ranks is that mean.
            count = np.array([(y >= 0).sum().item()], dtype=np.float64)
            sg.allreduce_(count)
            out = ddp(x, blocks)  # every rank runs forward and backward, an empty batch too:
            loss_sum = F.cross_entropy(out, y, ignore_index=-1, reduction="sum") if batch.batch_size else out.sum() * 0.0
            opt.zero_grad()  # (the empty batch's zero loss still all-reduces its zero gradients)
            (loss_sum * world / max(count[0], 1.0)).backward()
            if count[0] > 0:
                opt.step()
            state["epoch_sums"][0] += loss_sum.item()
            state["epoch_sums"][1] += (y >= 0).sum().item()
            stop_here()
        sums = np.array(state["epoch_sums"])
        sg.allreduce_(sums)
        state["epoch_sums"] = [0.0, 0.0]
        val_loader.set_epoch(0)
        val = accuracy(model, val_loader)
        if val > state["best_val"]:
            state.update(best_val=val, best_epoch=epoch, best_model=copy.deepcopy(model.state_dict()))
        log(f"epoch {epoch + 1}/{args.epochs}  loss {sums[0] / max(sums[1], 1):.4f}  val acc {val:.4f}", flush=True)
        stop_here()  # a signal during validation: stop at the epoch's end

    model.load_state_dict(state["best_model"])
    log(f"best validation accuracy {state['best_val']:.4f} at epoch {state['best_epoch'] + 1}")
    log(f"test accuracy {accuracy(model, test_loader):.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
