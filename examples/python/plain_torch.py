"""GraphSAGE in plain PyTorch (no PyG), its layer written out with index_add_ over the batch's
blocks, trained over a shardgnn partition with the gradients averaged by sg.allreduce_.

    mpiexec -n 2 python plain_torch.py PARTITION [--epochs 20] [--seed 0] [--checkpoint-dir DIR]

The settings and the protocol are `shardgnn train --model sage`'s, as in sage_pyg_ddp.py: 3 layers
of width 256 over fanouts 15,10,5, 1024 seeds a batch per rank, Adam at 0.01 with weight decay
5e-4, dropout 0.5 on every layer's input; validation after every epoch on fixed sampled
neighbourhoods, the best epoch's model scored on the test nodes over full neighbourhoods. No
torch.distributed at all: MPI (through shardgnn) carries the gradients.

A stop signal ends the run after the step in progress on every rank, with the model, the optimiser
and the loader's position saved to --checkpoint-dir, and exit status 75; the same command resumes.
"""
import argparse
import copy
import os

import numpy as np
import torch
import torch.nn.functional as F

import shardgnn as sg


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("partition", help="a folder written by `shardgnn partition`")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-dir", default="")
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--eval", choices=["sampled", "full"], default="sampled", help="per-epoch validation over the training fanouts or all neighbours")
    return p.parse_args()


class MeanSAGE(torch.nn.Module):
    """One GraphSAGE layer on a block: each destination's row from its own row and the mean of its
    sampled neighbours' rows, W_self h_v + b + W_neigh mean(h_u)."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.self_lin = torch.nn.Linear(d_in, d_out)
        self.neigh_lin = torch.nn.Linear(d_in, d_out, bias=False)

    def reset_parameters(self):
        """Glorot uniform with ReLU's gain and zero bias, as shardgnn's (and DGL's) SAGEConv: the own
        row's weights, then the neighbours' (sage_pyg_ddp.py draws its own in this order)."""
        torch.nn.init.xavier_uniform_(self.self_lin.weight, gain=2 ** 0.5)
        torch.nn.init.xavier_uniform_(self.neigh_lin.weight, gain=2 ** 0.5)
        torch.nn.init.zeros_(self.self_lin.bias)

    def forward(self, h, block):
        indptr, indices, num_dst = block  # CSR over destinations; indices: source positions
        degree = indptr[1:] - indptr[:-1]
        dst = torch.repeat_interleave(torch.arange(num_dst), degree)
        # The mean commutes with the bias-free map: map first when that makes the rows narrower.
        narrower = self.neigh_lin.out_features < self.neigh_lin.in_features
        msg = self.neigh_lin(h) if narrower else h
        agg = torch.zeros(num_dst, msg.shape[1]).index_add_(0, dst, msg[indices])
        agg = agg / degree.clamp(min=1).unsqueeze(1).to(agg.dtype)  # no neighbours: 0
        return self.self_lin(h[:num_dst]) + (agg if narrower else self.neigh_lin(agg))


class SAGE(torch.nn.Module):
    def __init__(self, dims, dropout):
        super().__init__()
        self.layers = torch.nn.ModuleList(MeanSAGE(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    def reset_parameters(self):
        for layer in self.layers:
            layer.reset_parameters()

    def forward(self, x, blocks):
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            x = layer(F.dropout(x, self.dropout, self.training), block)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return x


def tensors(batch):
    """Features, the seeds' labels, and the blocks, input layer first, as (indptr, indices, num_dst)."""
    blocks = [(torch.from_numpy(indptr), torch.from_numpy(indices), num_dst) for indptr, indices, _, num_dst in batch.blocks]
    return torch.from_numpy(batch.x), torch.from_numpy(batch.y), blocks


@torch.no_grad()
def accuracy(model, loader):
    """Accuracy over every rank's seeds of the loader's split (collective)."""
    model.eval()
    correct_total = np.zeros(2)
    for batch in loader:
        if batch.batch_size:
            x, y, blocks = tensors(batch)
            correct_total += [(model(x, blocks).argmax(1) == y).sum().item(), (y >= 0).sum().item()]
    sg.allreduce_(correct_total)
    return float(correct_total[0] / max(correct_total[1], 1))


def step_seed(*keys):
    """torch's seed for one step, keyed by (seed, rank, epoch, step): a resumed run draws the
    uninterrupted run's dropout masks."""
    return int(np.random.SeedSequence(list(keys)).generate_state(1)[0])


def main():
    args = parse_args()
    sg.init()
    sg.catch_stop_signals()
    rank, world = sg.rank(), sg.size()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    log = print if rank == 0 else (lambda *a, **k: None)

    part = sg.Partition(args.partition)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    loader = sg.NeighborLoader(part, fanouts, args.batch, split="train", seed=args.seed)
    val_fanouts = fanouts if args.eval == "sampled" else [-1] * len(fanouts)
    val_loader = sg.NeighborLoader(part, val_fanouts, args.batch, split="val", shuffle=False, seed=args.seed)
    test_loader = sg.NeighborLoader(part, [-1] * len(fanouts), args.batch, split="test", shuffle=False, seed=args.seed)

    model = SAGE([part.feature_dim] + [args.hidden] * (len(fanouts) - 1) + [part.num_classes], args.dropout)
    torch.manual_seed(args.seed)  # every rank starts from the same weights
    model.reset_parameters()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

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
        if not sg.stop_requested():  # collective, once a step
            return
        ckpt.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "loader": loader.state_dict(), "state": state})
        where = f"epoch {loader.epoch}" if loader.step == 0 else f"step {loader.step} of epoch {loader.epoch + 1}"
        log(f"stopped after {where}; " +
            ("the same command resumes" if ckpt.path else "no --checkpoint-dir, nothing saved"), flush=True)
        sg.exit_resumable()

    while loader.epoch < args.epochs:
        epoch = loader.epoch
        model.train()
        for batch in loader:
            torch.manual_seed(step_seed(args.seed, rank, epoch, loader.step))
            x, y, blocks = tensors(batch)
            count = np.array([(y >= 0).sum().item()], dtype=np.float64)
            sg.allreduce_(count)  # the step's labelled seeds over all ranks
            opt.zero_grad()
            if batch.batch_size:  # a rank whose seeds ran out gets empty batches: nothing to compute
                loss_sum = F.cross_entropy(model(x, blocks), y, ignore_index=-1, reduction="sum")
                # Scaled so that the mean over ranks below is the mean over all ranks' seeds.
                (loss_sum * world / max(count[0], 1.0)).backward()
                state["epoch_sums"][0] += loss_sum.item()
                state["epoch_sums"][1] += (y >= 0).sum().item()
            for p in model.parameters():  # every rank all-reduces every gradient, zeros for an empty batch
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                sg.allreduce_(p.grad, "mean")
            if count[0] > 0:
                opt.step()  # the same step on every rank: the weights stay equal
            stop_here()
        sums = np.array(state["epoch_sums"])
        sg.allreduce_(sums)
        state["epoch_sums"] = [0.0, 0.0]
        val_loader.set_epoch(0)  # the same sampled neighbourhoods at every validation
        val = accuracy(model, val_loader)
        if val > state["best_val"]:
            state.update(best_val=val, best_epoch=epoch, best_model=copy.deepcopy(model.state_dict()))
        log(f"epoch {epoch + 1}/{args.epochs}  loss {sums[0] / max(sums[1], 1):.4f}  val acc {val:.4f}", flush=True)
        stop_here()

    model.load_state_dict(state["best_model"])
    log(f"best validation accuracy {state['best_val']:.4f} at epoch {state['best_epoch'] + 1}")
    log(f"test accuracy {accuracy(model, test_loader):.4f}", flush=True)


if __name__ == "__main__":
    main()
