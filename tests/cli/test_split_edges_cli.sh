#!/usr/bin/env bash
# data split-edges end to end: Cora split as Kipf and Welling split it (85/5/10), the training graph
# the input less the held-out edges in both directions, keyed by the seed, validate and info knowing
# the new arrays; pre-split pair files in an edge list's original ids; partition carrying each
# held-out row to the part of its first node (verified, at 2 and 3 parts); bad input in one line.
set -euo pipefail
: "${SHARDGNN:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py=${NUMPY_PYTHON:-/usr/bin/python3}
samples="$(dirname "$0")/../../datasets/samples"

"$SHARDGNN" data convert "$samples/cora.npz" --symmetrize --drop-self-loops --drop-duplicates --out "$work/cora" > /dev/null
"$SHARDGNN" data split-edges "$work/cora" --val 0.05 --test 0.10 --seed 3 --eval-negatives 50 --out "$work/link" > "$work/out.txt" ||
  fail "split-edges: $(cat "$work/out.txt")"
grep -q "held out 264 validation and 528 test of 5278 undirected edges, as many non-edges each, 50 ranking negatives per held-out edge" "$work/out.txt" ||
  fail "split-edges said: $(cat "$work/out.txt")"
"$SHARDGNN" data validate "$work/link" > "$work/out.txt" || fail "validate: $(cat "$work/out.txt")"
"$SHARDGNN" data info "$work/link" | grep -q "^held-out edges    val 264, test 528 (not in the graph), as many non-edges each, 50 ranking negatives per positive$" ||
  fail "info does not report the held-out edges"
"$py" - "$work" <<'PY' || fail "the split is not the input less its held-out edges"
import json, sys
import numpy as np
w = sys.argv[1]
def edges(d):
    p, i = np.load(f"{d}/indptr.npy"), np.load(f"{d}/indices.npy")
    src = np.repeat(np.arange(len(p) - 1), np.diff(p))
    return {(int(a), int(b)) for a, b in zip(src, i)}
full, train = edges(f"{w}/cora"), edges(f"{w}/link")
vp, tp = np.load(f"{w}/link/val_pos_edges.npy"), np.load(f"{w}/link/test_pos_edges.npy")
vn, tn = np.load(f"{w}/link/val_neg_edges.npy"), np.load(f"{w}/link/test_neg_edges.npy")
held = {tuple(map(int, r)) for r in np.concatenate([vp, tp])}
assert vp.shape == (264, 2) and tp.shape == (528, 2) and vn.shape == vp.shape and tn.shape == tp.shape
assert len(held) == 792 and all(u < v and (u, v) in full for u, v in held)
assert train == full - held - {(v, u) for u, v in held}, "not the input less the held-out edges in both directions"
negs = {tuple(map(int, r)) for r in np.concatenate([vn, tn])}
assert len(negs) == 792 and not negs & full and all(u < v for u, v in negs)
dst = np.load(f"{w}/link/val_neg_dst.npy")
assert dst.shape == (264, 50) and all((int(u), int(x)) not in full and x != u for (u, _), row in zip(vp, dst) for x in row)
m = json.load(open(f"{w}/link/meta.json"))
assert m["edge_split"] == {"eval_negatives": 50} and m["num_edges"] == len(train)
for k in ("features", "labels", "train_idx"):
    assert (np.load(f"{w}/link/{k}.npy") == np.load(f"{w}/cora/{k}.npy")).all(), k
PY
# Keyed by the seed: the same seed writes the same bytes, another seed other edges.
"$SHARDGNN" data split-edges "$work/cora" --seed 3 --eval-negatives 50 --out "$work/link-again" > /dev/null
for f in "$work/link"/*.npy; do cmp -s "$f" "$work/link-again/${f##*/}" || fail "the same seed gave another ${f##*/}"; done
"$SHARDGNN" data split-edges "$work/cora" --seed 4 --out "$work/link-4" > /dev/null
cmp -s "$work/link/val_pos_edges.npy" "$work/link-4/val_pos_edges.npy" && fail "seeds 3 and 4 held out the same edges"
[[ -z "$(find "$work" -maxdepth 1 -name '*.scratch-*')" ]] || fail "split-edges left a scratch folder"

# Pre-split files in an edge list's own ids (relabelled on conversion: node_ids.npy maps them).
"$py" - "$work" <<'PY'
import sys
w = sys.argv[1]
pairs = [(10 * u + 5, 10 * ((u * 7 + 3) % 60) + 5) for u in range(60)] + [(10 * u + 5, 10 * (u + 1) + 5) for u in range(59)]
pairs = sorted({tuple(sorted(p)) for p in pairs if p[0] != p[1]})
open(f"{w}/g.txt", "w").write("".join(f"{u} {v}\n" for u, v in pairs))
open(f"{w}/val.txt", "w").write("".join(f"{v} {u}\n" for u, v in pairs[:5]))
open(f"{w}/test.txt", "w").write("".join(f"{u} {v}\n" for u, v in pairs[5:15]))
open(f"{w}/bad.txt", "w").write("5 15\n7 8\n")
PY
"$SHARDGNN" data convert "$work/g.txt" --symmetrize --out "$work/g" > /dev/null
"$SHARDGNN" data split-edges "$work/g" --val-edges "$work/val.txt" --test-edges "$work/test.txt" --out "$work/g-split" > "$work/out.txt" ||
  fail "split-edges from files: $(cat "$work/out.txt")"
grep -q "held out 5 validation and 10 test of" "$work/out.txt" || fail "split-edges from files said: $(cat "$work/out.txt")"
"$py" - "$work" <<'PY' || fail "the pre-split pairs are not the files' edges"
import sys
import numpy as np
w = sys.argv[1]
ids = np.load(f"{w}/g/node_ids.npy")
vp = np.load(f"{w}/g-split/val_pos_edges.npy")
want = [tuple(sorted(map(int, l.split()))) for l in open(f"{w}/val.txt")]
assert [tuple(sorted((int(ids[u]), int(ids[v])))) for u, v in vp] == want, (vp, want)
PY
"$SHARDGNN" data validate "$work/g-split" > /dev/null || fail "the pre-split dataset does not validate"

# Partitioned: each part holds the rows whose first node it owns, as its global ids; the verifier
# compares them with the dataset's.
for parts in 2 3; do
  "$SHARDGNN" partition "$work/link" --parts "$parts" --out "$work/link-$parts" --verify > "$work/out.txt" 2>&1 ||
    fail "partition --parts $parts: $(cat "$work/out.txt")"
  "$SHARDGNN" partition verify "$work/link-$parts" > /dev/null || fail "partition verify --parts $parts"
done
"$py" - "$work" <<'PY' || fail "the shards' held-out rows are not the dataset's"
import json, sys
import numpy as np
w = sys.argv[1]
for name in ("val_pos_edges", "test_neg_edges", "val_neg_dst"):
    want = np.load(f"{w}/link/{name}.npy")
    info = json.load(open(f"{w}/link-3/partition.json"))
    off = info["offsets"]
    got = []
    old = np.zeros(off[-1], dtype=np.int64)
    for k in range(3):
        old[off[k]:off[k + 1]] = np.load(f"{w}/link-3/part-{k}/orig_ids.npy")
    for k in range(3):
        rows = np.load(f"{w}/link-3/part-{k}/{name}.npy")
        lead = rows if not name.endswith("_dst") else np.load(f"{w}/link-3/part-{k}/val_pos_edges.npy")
        assert ((lead[:, 0] >= off[k]) & (lead[:, 0] < off[k + 1])).all(), (name, k)
        got += [tuple(old[r]) for r in rows]
    assert sorted(got) == sorted(map(tuple, want)), name
PY

# Bad input: one line each, non-zero exit, nothing written.
expect_error() {
  local want=$1; shift
  if "$SHARDGNN" "$@" > "$work/out.txt" 2> "$work/err.txt"; then fail "$* succeeded"; fi
  [[ $(wc -l < "$work/err.txt") -eq 1 ]] || fail "$*: not one line: $(cat "$work/err.txt")"
  grep -qF -- "$want" "$work/err.txt" || fail "$*: expected '$want', got: $(cat "$work/err.txt")"
  [[ ! -e "$work/x" ]] || fail "$* left its output"
}
"$SHARDGNN" data convert "$work/g.txt" --out "$work/g-directed" > /dev/null
expect_error "is directed: split-edges holds out undirected edges (convert it with --symmetrize)" data split-edges "$work/g-directed" --out "$work/x"
expect_error "must be fractions of at least 0 that sum below 1" data split-edges "$work/cora" --val 0.5 --test 0.5 --out "$work/x"
expect_error "is already split into training and held-out edges" data split-edges "$work/link" --out "$work/x"
expect_error "bad.txt: pair 2: node id 7 is not a node of the dataset" data split-edges "$work/g" --val-edges "$work/bad.txt" --test-edges "$work/test.txt" --out "$work/x"
expect_error "--val-edges and --test-edges go together" data split-edges "$work/g" --val-edges "$work/val.txt" --out "$work/x"
echo "split-edges CLI OK"
