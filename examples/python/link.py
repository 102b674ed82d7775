"""Link prediction over a shardgnn partition: a GraphSAGE encoder (PyG SAGEConv on the batch's
blocks) and a dot-product (or MLP) decoder, trained on sg.LinkLoader's batches, scored by AUC on
the held-out edges.

    shardgnn data convert cora.npz --out cora
    shardgnn data split-edges cora --seed 0 --out cora-split      # 85/5/10, with negatives
    shardgnn partition cora-split --parts 2 --method metis --out cora-split2
    mpiexec -n 2 python link.py cora-split2 [--epochs 20] [--seed 0] [--checkpoint-dir DIR]

A LinkLoader batch's seeds are the ends of its pairs: `batch.pairs` [P, 3] holds the two ends'
positions in `n_id` (both among the first `batch_size`, the seeds, whose embeddings the encoder
outputs) and the target, 1 for a training edge and 0 for one of its `--negatives` corrupted pairs.
The positives' own edges are cut from the sampled blocks (exclude=True), so that the encoder never
sees the edge it is asked about.

Evaluation (validation after each epoch, the test on the best epoch's model, as `shardgnn train
--task link`): `part.held_out("test_pos" | "test_neg")` gives the held-out pairs whose first end
this rank owns, in global ids; their second end may be anywhere. So every rank first embeds the
nodes it owns, over full neighbourhoods (a NeighborLoader with split="all", fanouts -1, in id
order), the embeddings are put together on every rank (each rank fills its own rows of an [N, D]
table of zeros, and an all-reduce sum fills the rest: N x D floats a rank, right for a graph of
this size; a large graph would exchange only the rows its pairs need, and embed its nodes layer by
layer with sg.LayerwiseInference where the package has it), every rank scores its own pairs, and
the scores are gathered for one AUC over all pairs. The last line: `test auc 0.8867`.

A stop signal ends the run after the step in progress, saving the model, the optimiser and the
loader's position to --checkpoint-dir, with exit status 75; the same command resumes.
"""
import argparse
import copy
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import SAGEConv

import shardgnn as sg


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("partition", help="a partition of a dataset split by `shardgnn data split-edges`")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-dir", default="")
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--batch", type=int, default=256, help="training edges per batch per rank")
    p.add_argument("--negatives", type=int, default=1, help="corrupted pairs per training edge")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--embedding-dim", type=int, default=32)
    p.add_argument("--decoder", choices=["dot", "mlp"], default="dot")
    p.add_argument("--lr", type=float, default=0.01)
    return p.parse_args()


class Encoder(torch.nn.Module):
    """GraphSAGE on the blocks, input layer first: the seeds' embeddings."""

    def __init__(self, dims):
        super().__init__()
        self.convs = torch.nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x, blocks):
        for i, (conv, (edge_index, num_dst)) in enumerate(zip(self.convs, blocks)):
            x = conv((x, x[:num_dst]), edge_index, size=(x.shape[0], num_dst))
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x


class LinkModel(torch.nn.Module):
    def __init__(self, dims, decoder):
        super().__init__()
        self.encoder = Encoder(dims)
        d = dims[-1]
        # mlp: a two-layer MLP over h_u * h_v (shardgnn train's --scorer mlp); dot: h_u . h_v
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.ReLU(), torch.nn.Linear(d, 1)) if decoder == "mlp" else None

    def score(self, hu, hv):
        return (hu * hv).sum(1) if self.mlp is None else self.mlp(hu * hv).squeeze(1)


def blocks_of(batch):
    return [(torch.from_numpy(batch.edge_index(h)), batch.blocks[h][3]) for h in range(batch.num_layers)]


def gather(values):
    """Every rank's 1-D float64 array, concatenated in rank order, on every rank (through an
    all-reduce: each rank fills its own slice of a zero buffer)."""
    counts = np.zeros(sg.size(), dtype=np.int64)
    counts[sg.rank()] = len(values)
    sg.allreduce_(counts)
    out = np.zeros(int(counts.sum()))
    start = int(counts[: sg.rank()].sum())
    out[start: start + len(values)] = values
    return sg.allreduce_(out)


def auc(pos, neg):
    """The probability that a positive outscores a negative (ties count half): Mann-Whitney U."""
    scores = np.concatenate([pos, neg])
    order = np.argsort(scores, kind="mergesort")
    _, inverse, counts = np.unique(scores[order], return_inverse=True, return_counts=True)
    mid_rank = np.cumsum(counts) - (counts - 1) / 2.0  # 1-based, tied scores share their mean rank
    ranks = np.empty(len(scores))
    ranks[order] = mid_rank[inverse]
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2.0) / (len(pos) * len(neg)))


@torch.no_grad()
def held_out_auc(model, part, embed_loader, which):
    """AUC of the held-out pairs `which` ("val" or "test") over every rank's. Collective."""
    model.eval()
    table = torch.zeros(part.num_nodes, model.encoder.convs[-1].out_channels)
    for batch in embed_loader:  # this rank's own nodes, each once
        if batch.batch_size:
            h = model.encoder(torch.from_numpy(batch.x), blocks_of(batch))
            table[torch.from_numpy(batch.n_id[: batch.batch_size])] = h
    sg.allreduce_(table)  # each row is filled by its owner alone: the sum is every rank's rows
    scores = {}
    for kind in ("pos", "neg"):
        pairs = torch.from_numpy(np.asarray(part.held_out(f"{which}_{kind}"), dtype=np.int64))
        scores[kind] = gather(model.score(table[pairs[:, 0]], table[pairs[:, 1]]).double().numpy())
    return auc(scores["pos"], scores["neg"])


def main():
    args = parse_args()
    sg.init()
    sg.catch_stop_signals()
    rank, world = sg.rank(), sg.size()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    log = print if rank == 0 else (lambda *a, **k: None)

    part = sg.Partition(args.partition)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    loader = sg.LinkLoader(part, fanouts, args.batch, negatives=args.negatives, seed=args.seed)
    embed_loader = sg.NeighborLoader(part, [-1] * len(fanouts), 1024, split="all", shuffle=False)

    torch.manual_seed(args.seed)
    model = LinkModel([part.feature_dim] + [args.hidden] * (len(fanouts) - 1) + [args.embedding_dim], args.decoder)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

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
            count = np.array([0.0])
            opt.zero_grad()
            if batch.batch_size:
                h = model.encoder(torch.from_numpy(batch.x), blocks_of(batch))
                pairs = torch.from_numpy(np.asarray(batch.pairs, dtype=np.int64))
                logits = model.score(h[pairs[:, 0]], h[pairs[:, 1]])
                loss_sum = F.binary_cross_entropy_with_logits(logits, pairs[:, 2].float(), reduction="sum")
                loss_sum.backward()
                count[0] = len(pairs)
                state["epoch_sums"][0] += loss_sum.item()
                state["epoch_sums"][1] += len(pairs)
            # The mean over every rank's pairs: gradients of the sums, summed, over the total.
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
        val = held_out_auc(model, part, embed_loader, "val")
        if val > state["best_val"]:
            state.update(best_val=val, best_epoch=epoch, best_model=copy.deepcopy(model.state_dict()))
        log(f"epoch {epoch + 1}/{args.epochs}  loss {sums[0] / max(sums[1], 1):.4f}  val auc {val:.4f}", flush=True)
        stop_here()

    model.load_state_dict(state["best_model"])
    log(f"best validation auc {state['best_val']:.4f} at epoch {state['best_epoch'] + 1}")
    log(f"test auc {held_out_auc(model, part, embed_loader, 'test'):.4f}", flush=True)


if __name__ == "__main__":
    main()
