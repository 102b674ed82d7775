#!/usr/bin/env bash
# Typed graphs end to end: an ogbn-mag-layout folder and an IGB-Het-layout folder, written here in
# those layouts, convert (with --add-reverse) into typed datasets whose per-type features numpy reads
# back as the input's; export --format igbh round-trips one; data info lists types and relations; the hetero generator writes one;
# partition --balance ntypes keeps each type within --imbalance at 1 and 2 ranks and the verifier
# passes; float16 and bfloat16 storage halve every type's feature bytes and verify. With the trainer
# built (WITH_TORCH=ON): both converted folders train, R-GAT over a 2-part partition of the
# generator's graph (float16 features, featureless institutes) with per-relation fanouts, predict
# from its run folder scores as train did (on 2 ranks, and on 1 over both parts), a 4-part partition
# trains on 2 ranks and resumes on 1, and the wrong model or relation is a one-line error. Two
# relations between one pair of types convert with a relation id per edge.
set -euo pipefail
: "${SHARDGNN:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Four parts on 2 ranks (each rank's two merged) trained an epoch with "${q[@]}" (whose run folder
# is RUN), resumed on 1 rank, and predict on 2 ranks scoring what train printed. WHAT names the case.
resume_then_predict() {  # DATA RUN OUT WHAT
  local data=$1 run=$2 out=$3 what=$4
  timeout 300 ${MPIEXEC:-mpiexec} -n 2 "$SHARDGNN" train "$data" "${q[@]}" --epochs 1 > "$work/out.txt" 2>&1 || fail "$what: $(cat "$work/out.txt")"
  grep -q "4 parts merged 2 per rank" "$work/out.txt" || fail "$what: 4 parts on 2 ranks not said: $(cat "$work/out.txt")"
  timeout 300 "$SHARDGNN" train "$data" "${q[@]}" --epochs 2 --resume > "$work/out.txt" 2>&1 || fail "$what, resumed on 1 rank: $(cat "$work/out.txt")"
  grep -q "at epoch 2 of 2 (the checkpoint was written by 2 ranks" "$work/out.txt" || fail "$what: resume on 1 rank not said: $(cat "$work/out.txt")"
  local want
  want=$(sed -n 's/^test \(accuracy [0-9.]*\), .*(full neighbourhoods.*/\1/p' "$work/out.txt")
  timeout 300 ${MPIEXEC:-mpiexec} -n 2 "$SHARDGNN" predict "$run" "$data" --out "$out" > "$work/pout.txt" 2>&1 || fail "$what: predict: $(cat "$work/pout.txt")"
  grep -q "test $want, " "$work/pout.txt" || fail "$what: predict scored otherwise than train ($want): $(cat "$work/pout.txt")"
}
py=${NUMPY_PYTHON:-/usr/bin/python3}

"$py" - "$work" <<'PY'
import gzip, os, sys
import numpy as np
w = sys.argv[1]
rng = np.random.default_rng(0)
# ogbn-mag's raw layout: types in the file's order, type-local ids, gzip CSVs without headers.
m = f"{w}/mag"
counts = {"author": 30, "field_of_study": 8, "institution": 4, "paper": 40}
def csv(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write("".join(",".join(str(x) for x in r) + "\n" for r in rows))
csv(f"{m}/raw/num-node-dict.csv.gz", [list(counts), list(counts.values())])
def edges(s, d, k):
    return sorted({(int(rng.integers(counts[s])), int(rng.integers(counts[d]))) for _ in range(k)})
for s, r, d, k in [("author", "affiliated_with", "institution", 30), ("author", "writes", "paper", 80),
                   ("paper", "cites", "paper", 100), ("paper", "has_topic", "field_of_study", 60)]:
    csv(f"{m}/raw/relations/{s}___{r}___{d}/edge.csv.gz", edges(s, d, k))
feat = rng.standard_normal((40, 5)).astype(np.float32)
csv(f"{m}/raw/node-feat/paper/node-feat.csv.gz", [[repr(float(x)) for x in row] for row in feat])
np.save(f"{w}/mag_paper_feat.npy", feat)
csv(f"{m}/raw/node-label/paper/node-label.csv.gz", [[int(x)] for x in rng.integers(0, 3, 40)])
for part, ids in [("train", range(0, 24)), ("valid", range(24, 32)), ("test", range(32, 40))]:
    csv(f"{m}/split/time/paper/{part}.csv.gz", [[i] for i in ids])
# IGB-Het's numpy layout.
g = f"{w}/igbh/processed"
for t, n in [("paper", 50), ("author", 70), ("institute", 5), ("fos", 12)]:
    os.makedirs(f"{g}/{t}")
    np.save(f"{g}/{t}/node_feat.npy", rng.standard_normal((n, 4)).astype(np.float32))
np.save(f"{g}/paper/node_label_19.npy", rng.integers(0, 19, 50).astype(np.float32))
for s, r, d, ns, nd, k in [("paper", "cites", "paper", 50, 50, 120), ("paper", "written_by", "author", 50, 70, 120),
                           ("author", "affiliated_to", "institute", 70, 5, 70), ("paper", "topic", "fos", 50, 12, 100)]:
    os.makedirs(f"{g}/{s}__{r}__{d}")
    e = np.unique(np.stack([rng.integers(ns, size=k), rng.integers(nd, size=k)], 1), axis=0)
    np.save(f"{g}/{s}__{r}__{d}/edge_index.npy", e.astype(np.int64))
PY

"$SHARDGNN" data convert "$work/mag" --add-reverse --out "$work/mag-ds" > "$work/out.txt" || fail "convert mag: $(cat "$work/out.txt")"
grep -q "^wrote $work/mag-ds: 82 nodes, .* 4 node types, 7 relations, 3 classes, split 24/8/8$" "$work/out.txt" || fail "convert mag said: $(cat "$work/out.txt")"
"$SHARDGNN" data validate "$work/mag-ds" > /dev/null || fail "validate mag"
"$SHARDGNN" data info "$work/mag-ds" > "$work/info.txt"
grep -q "^node type *paper: 40 nodes (ids 42..81), 5 features, 40 labelled$" "$work/info.txt" || fail "info: $(cat "$work/info.txt")"
grep -q "^relation *paper__rev_writes__author: " "$work/info.txt" || fail "info lacks the reverse relation: $(cat "$work/info.txt")"
"$py" -c "import numpy as np, sys; a = np.load(sys.argv[1]); b = np.load(sys.argv[2]); assert a.dtype == np.float32 and np.array_equal(a, b), (a, b)" \
  "$work/mag-ds/features_paper.npy" "$work/mag_paper_feat.npy" || fail "features_paper.npy is not the input's"

"$SHARDGNN" data convert "$work/igbh" --add-reverse --split random:0.6,0.2 --out "$work/igbh-ds" > "$work/out.txt" || fail "convert igbh: $(cat "$work/out.txt")"
grep -q "^wrote $work/igbh-ds: 137 nodes, .* 4 node types, 7 relations, 19 classes, split 30/10/10$" "$work/out.txt" || fail "convert igbh said: $(cat "$work/out.txt")"
"$SHARDGNN" data validate "$work/igbh-ds" > /dev/null || fail "validate igbh"

# Bad input: one line naming the file and the edge, nothing written.
"$py" -c "import numpy as np, sys; np.save(sys.argv[1], np.array([[0, 1], [0, 99]], dtype=np.int64))" "$work/igbh/processed/paper__cites__paper/edge_index.npy"
set +e
"$SHARDGNN" data convert "$work/igbh" --out "$work/bad" 2> "$work/err.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "a bad edge exited $rc"
[ "$(wc -l < "$work/err.txt")" = 1 ] && grep -q "edge_index.npy: edge 2: .*paper id below 50" "$work/err.txt" || fail "bad edge said: $(cat "$work/err.txt")"
[ ! -e "$work/bad" ] || fail "a failed convert left $work/bad"

"$SHARDGNN" data generate hetero --papers 3000 --featureless institute --out "$work/gen" > /dev/null
for ranks in 1 2; do
  out="$work/gen-p$ranks"
  ${MPIEXEC:-mpiexec} -n "$ranks" "$SHARDGNN" partition "$work/gen" --parts 4 --balance ntypes,train --out "$out" --verify > "$work/part.txt" 2>&1 ||
    fail "partition on $ranks ranks: $(cat "$work/part.txt")"
  grep -q "^verified" "$work/part.txt" || fail "not verified: $(cat "$work/part.txt")"
  "$py" - "$out/partition.json" <<'PY' || fail "a node type is out of balance: $(grep "type imbalance" "$work/part.txt")"
import json, sys
d = json.load(open(sys.argv[1]))
imb = d["parameters"]["imbalance"]
for t, nt in enumerate(d["dataset"]["node_types"]):
    most = max(p["type_nodes"][t] for p in d["parts"])
    assert most <= (1 + imb) * nt["count"] / len(d["parts"]), (nt, most)
PY
done
# Exported in IGB-Het's layout (reverses included) and read back: the same types, relations and
# features, the types now in name order; the featureless institutes stay featureless.
"$SHARDGNN" data export "$work/gen" --format igbh --out "$work/gen-igbh" > /dev/null
"$SHARDGNN" data convert "$work/gen-igbh" --out "$work/gen-back" > /dev/null
summary() { "$SHARDGNN" data info "$1" | grep -E "^(relation|node type)" | sed 's/ (ids [0-9.]*)//' | sort; }
diff <(summary "$work/gen") <(summary "$work/gen-back") > "$work/diff.txt" || fail "igbh round trip differs: $(cat "$work/diff.txt")"
"$py" - "$work/gen" "$work/gen-back" <<'PY' || fail "igbh round trip changed the paper features"
import sys, numpy as np
assert np.array_equal(np.load(sys.argv[1] + "/features_paper.npy"), np.load(sys.argv[2] + "/features_paper.npy"))
PY

# float16 storage: half the bytes of every featured type, in the dataset and the shards, verified.
"$SHARDGNN" data convert "$work/gen" --feature-dtype float16 --out "$work/gen16" > /dev/null
"$py" - "$work/gen" "$work/gen16" <<'PY' || fail "float16 features are not the float32 ones halved and rounded"
import sys, numpy as np
a, b = np.load(sys.argv[1] + "/features_paper.npy"), np.load(sys.argv[2] + "/features_paper.npy")
assert b.dtype == np.float16 and b.nbytes * 2 == a.nbytes and np.array_equal(a.astype(np.float16), b)
PY
"$SHARDGNN" partition "$work/gen16" --parts 2 --balance ntypes --out "$work/p16" --verify > "$work/part.txt" 2>&1 || fail "float16 partition: $(cat "$work/part.txt")"
"$SHARDGNN" partition "$work/gen" --parts 2 --balance ntypes --feature-dtype bfloat16 --out "$work/pb16" --verify > "$work/part.txt" 2>&1 ||
  fail "bfloat16 partition: $(cat "$work/part.txt")"
# Two relations between one pair of types (authors write and review papers): each edge stores its
# relation (edge_relations.npy, int8), rows ordered by (relation, neighbour); info and validate say
# so, export --format igbh round-trips it, partition carries it (2 and 4 parts, verified; the
# report says so), and train refuses it in one line until the sampler carries relation ids.
"$py" - "$work/mag" <<'PY'
import gzip, os, sys
d = sys.argv[1] + "/raw/relations/author___reviews___paper"
os.makedirs(d)
with gzip.open(d + "/edge.csv.gz", "wt") as f:
    f.write("".join(f"{a},{p}\n" for a, p in [(0, 1), (0, 5), (3, 1), (7, 39), (29, 0)]))
PY
"$SHARDGNN" data convert "$work/mag" --add-reverse --out "$work/kg" > "$work/out.txt" || fail "convert two relations on a pair: $(cat "$work/out.txt")"
grep -q "4 node types, 10 relations" "$work/out.txt" || fail "convert with relation ids said: $(cat "$work/out.txt")"
"$SHARDGNN" data validate "$work/kg" > /dev/null || fail "validate a graph with relation ids"
"$SHARDGNN" data info "$work/kg" > "$work/info.txt"
grep -q "^relation ids *one per edge (edge_relations.npy, |i1)" "$work/info.txt" && grep -q "^relation *author__reviews__paper: 5 entries$" "$work/info.txt" &&
  grep -q "^relation *paper__rev_reviews__author: 5 entries$" "$work/info.txt" || fail "info of relation ids: $(cat "$work/info.txt")"
"$py" - "$work/kg" <<'PY' || fail "edge_relations.npy is not one int8 per entry, rows ordered by (relation, neighbour)"
import json, sys
import numpy as np
d = sys.argv[1]
meta = json.load(open(d + "/meta.json"))
assert meta["version"] == 5 and meta["relation_ids"] is True, meta
indptr, indices, rel = np.load(d + "/indptr.npy"), np.load(d + "/indices.npy"), np.load(d + "/edge_relations.npy")
assert rel.dtype == np.int8 and rel.shape == indices.shape, (rel.dtype, rel.shape)
for u in range(len(indptr) - 1):
    row = list(zip(rel[indptr[u]:indptr[u + 1]], indices[indptr[u]:indptr[u + 1]]))
    assert row == sorted(set(row)), (u, row)
PY
"$SHARDGNN" data export "$work/kg" --format igbh --out "$work/kg-igbh" > /dev/null
"$SHARDGNN" data convert "$work/kg-igbh" --out "$work/kg-back" > /dev/null
[ "$(summary "$work/kg" | grep ^relation)" = "$(summary "$work/kg-back" | grep ^relation)" ] || fail "relation ids through the IGB-Het layout: $(summary "$work/kg-back")"
for k in 2 4; do
  "$SHARDGNN" partition "$work/kg" --parts $k --balance ntypes --out "$work/kg-p$k" --verify > "$work/out.txt" 2>&1 ||
    fail "partition of relation ids into $k: $(cat "$work/out.txt")"
  grep -q "^relation ids *one per edge (edge_relations.npy), 10 relations" "$work/out.txt" || fail "partition report of relation ids: $(cat "$work/out.txt")"
done
"$py" - "$work/kg" "$work/kg-p4" <<'PY' || fail "the shards' (neighbour, relation) entries are not the dataset's"
import json, sys
import numpy as np
d, p = sys.argv[1], sys.argv[2]
info = json.load(open(p + "/partition.json"))
assert info["version"] == 5, info["version"]
indptr, indices, rel = np.load(d + "/indptr.npy"), np.load(d + "/indices.npy"), np.load(d + "/edge_relations.npy")
want = {(u, int(v), int(r)) for u in range(len(indptr) - 1) for v, r in zip(indices[indptr[u]:indptr[u + 1]], rel[indptr[u]:indptr[u + 1]])}
old = np.concatenate([np.load(f"{p}/part-{k}/orig_ids.npy") for k in range(4)])
got = set()
for k in range(4):
    sp, si, sr = (np.load(f"{p}/part-{k}/{n}.npy") for n in ("indptr", "indices", "edge_relations"))
    assert sr.dtype == np.int8 and sr.shape == si.shape
    ids = np.load(f"{p}/part-{k}/orig_ids.npy")
    for i in range(len(sp) - 1):
        row = list(zip(sr[sp[i]:sp[i + 1]], si[sp[i]:sp[i + 1]]))
        assert row == sorted(set(row)), (k, i, row)
        got |= {(int(ids[i]), int(old[v]), int(r)) for r, v in row}
assert got == want, len(got ^ want)
PY
if [ "${WITH_TORCH:-OFF}" = ON ]; then
  export OMP_NUM_THREADS=1
  # Every neighbour, no dropout, one step: R-GCN's losses are one rank's at 2 and 4 ranks.
  for n in 1 2 4; do
    input=kg; [ $n = 1 ] || input=kg-p$n
    timeout 300 ${MPIEXEC:-mpiexec} -n $n "$SHARDGNN" train "$work/$input" --model rgcn --fanouts=-1,-1 --dropout 0 --hidden 8 --batch 100000 --epochs 2 \
      --seed 1 > "$work/out.txt" 2>&1 || fail "train rgcn on relation ids, $n ranks: $(cat "$work/out.txt")"
    losses=$(sed -n 's/^epoch .* loss \([0-9.]*\) .*/\1/p' "$work/out.txt" | tr '\n' ' ')
    [ -n "$losses" ] || fail "no losses on relation ids, $n ranks: $(cat "$work/out.txt")"
    [ $n = 1 ] && one="$losses"
    [ "$losses" = "$one" ] || fail "relation ids: losses at $n ranks ($losses) are not one rank's ($one)"
  done
  # R-GAT sampled on 4 parts over 2 ranks, stopped after an epoch, resumed on 1 rank; predict
  # scores what train printed.
  q=(--model rgat --fanouts 3,3 --hidden 8 --heads 2 --batch 4 --run-dir "$work/kg-run")
  resume_then_predict "$work/kg-p4" "$work/kg-run" "$work/kg-pred" "rgat on relation ids"
fi
rm -r "$work/mag/raw/relations/author___reviews___paper"

if [ "${WITH_TORCH:-OFF}" = ON ]; then
  export OMP_NUM_THREADS=1
  for ds in mag-ds igbh-ds; do
    timeout 120 "$SHARDGNN" train "$work/$ds" --model rgcn --fanouts 5,5 --hidden 16 --batch 8 --epochs 2 > "$work/out.txt" 2>&1 ||
      fail "train $ds: $(cat "$work/out.txt")"
    grep -qE "^test accuracy [0-9.]+, macro-F1 .* \(full neighbourhoods" "$work/out.txt" || fail "train $ds printed no test accuracy: $(cat "$work/out.txt")"
  done
  timeout 300 ${MPIEXEC:-mpiexec} -n 2 "$SHARDGNN" train "$work/p16" --model rgat --fanouts "5,5;cites=3,3" --hidden 16 --heads 2 --batch 64 --epochs 2 \
    --checkpoint-dir "$work/ck" > "$work/out.txt" 2>&1 || fail "train rgat on 2 ranks: $(cat "$work/out.txt")"
  grep -q "^training rgat on .* 2 ranks" "$work/out.txt" || fail "rgat header: $(cat "$work/out.txt")"
  ls "$work/ck" | grep -q "^checkpoint-embeddings-rank1-epoch2-step0.pt$" || fail "no embedding rows of rank 1 beside the checkpoint: $(ls "$work/ck")"
  # predict from the run folder (the embedding rows beside its checkpoint) scores what train's
  # full-neighbourhood line printed, and lists each type's rows.
  want=$(sed -n 's/^test \(accuracy [0-9.]*\), .*(full neighbourhoods.*/\1/p' "$work/out.txt")
  timeout 300 ${MPIEXEC:-mpiexec} -n 2 "$SHARDGNN" predict "$work/ck" "$work/p16" --out "$work/pred" > "$work/pout.txt" 2>&1 || fail "predict: $(cat "$work/pout.txt")"
  grep -q "test $want, " "$work/pout.txt" || fail "predict scored otherwise than train ($want): $(cat "$work/pout.txt")"
  grep -q '"node_types":\[{"name":"' "$work/pred/predictions.json" || fail "predictions.json lacks the node types: $(head -c 300 "$work/pred/predictions.json")"
  # One rank over both parts (merged) reads both ranks' embedding files, matched by node id: the same scores.
  timeout 300 "$SHARDGNN" predict "$work/ck" "$work/p16" --out "$work/pred1" > "$work/pout.txt" 2>&1 || fail "predict on 1 rank: $(cat "$work/pout.txt")"
  grep -q "test $want, " "$work/pout.txt" || fail "predict on 1 rank scored otherwise than train ($want): $(cat "$work/pout.txt")"
  # Four parts on 2 ranks (each rank's two merged), stopped after an epoch, resumed on 1 rank.
  q=(--model rgcn --fanouts 5,5 --hidden 16 --batch 64 --embedding-optimizer adagrad --run-dir "$work/four")
  # predict reads the rows alone (the files hold Adagrad's state, predict's tables Adam's).
  resume_then_predict "$work/gen-p1" "$work/four" "$work/pred4" "rgcn after adagrad"
  set +e
  timeout 120 ${MPIEXEC:-mpiexec} -n 2 "$SHARDGNN" predict "$work/ck/weights.pt" "$work/p16" --out "$work/pred2" > /dev/null 2> "$work/err.txt"
  status=$?
  set -e
  [ "$status" = 1 ] && grep -q "pass the run folder" "$work/err.txt" || fail "predict without the embedding rows said ($status): $(cat "$work/err.txt")"
  expect_train_error() {  # the message, one line, status 1
    local want=$1; shift
    set +e
    timeout 120 "$SHARDGNN" train "$@" > "$work/out.txt" 2> "$work/err.txt"
    local status=$?
    set -e
    [ "$status" = 1 ] || fail "train $* exited $status: $(cat "$work/err.txt")"
    [ "$(wc -l < "$work/err.txt")" = 1 ] && grep -q -- "$want" "$work/err.txt" || fail "train $* said: $(cat "$work/err.txt")"
  }
  expect_train_error "train it with --model rgcn or --model rgat" "$work/gen" --model sage --epochs 1
  expect_train_error "no relation named 'citez'" "$work/gen" --model rgcn --fanouts "5,5;citez=1,1" --epochs 1
  # bench hetero: our R-GAT's row, and a peer that fails (a Python without torch or DGL: it reads
  # the typed folder, then its import fails) fails the benchmark with the peer's own line.
  set +e
  timeout 300 "$SHARDGNN" bench hetero --papers 400 --feature-dim 16 --epochs 1 --hidden 16 --heads 2 --batch 64 --eval-sample 100 \
    --workdir "$work/bhet" --dgl-python /usr/bin/python3 --json "$work/bhet.json" > "$work/out.txt" 2> "$work/err.txt"
  status=$?
  set -e
  [ "$status" = 1 ] || fail "a failed DGL peer left bench hetero's exit status $status: $(cat "$work/out.txt" "$work/err.txt")"
  grep -qE "^shardgnn +1 +[0-9.]+ " "$work/out.txt" || fail "bench hetero: no row of ours: $(cat "$work/out.txt")"
  grep -qE "^shardgnn bench hetero: dgl on 1 core\(s\) failed: exit 1: ModuleNotFoundError: No module named '(torch|dgl)'$" "$work/err.txt" ||
    fail "bench hetero's failed peer: not its own line: $(tail -3 "$work/err.txt")"
  /usr/bin/python3 -c 'import json, sys; sys.exit(not any(r["who"] == "dgl" and r["failed"] and r["error"] for r in json.load(open(sys.argv[1]))["rows"]))' \
    "$work/bhet.json" || fail "bench hetero JSON: $(cat "$work/bhet.json")"
fi
# data generate kg: one entity type, 8 relations and their reverses with an id per edge (int8),
# each relation's edges shifting the class by its number; partitioned at 2 parts and trained by
# R-GCN at 2 ranks, which learns what the relations tell (the test accuracy well above 1/8).
"$SHARDGNN" data generate kg --entities 1500 --feature-dim 8 --out "$work/kgg" > "$work/out.txt" || fail "generate kg: $(cat "$work/out.txt")"
"$SHARDGNN" data validate "$work/kgg" > /dev/null || fail "validate the kg generator's folder"
"$SHARDGNN" data info "$work/kgg" > "$work/info.txt"
grep -q "^relation ids *one per edge (edge_relations.npy, |i1)" "$work/info.txt" && grep -qE "^relation *entity__rev_r7__entity: [0-9]+ entries$" "$work/info.txt" ||
  fail "info of the kg generator's folder: $(cat "$work/info.txt")"
set +e
"$SHARDGNN" data generate kg --signal 2 --out "$work/kg-bad" > "$work/out.txt" 2> "$work/err.txt"
status=$?
set -e
[ "$status" = 1 ] && [ "$(wc -l < "$work/err.txt")" = 1 ] && grep -q -- "--signal must be in \[0, 1\], got 2" "$work/err.txt" && [ ! -e "$work/kg-bad" ] ||
  fail "generate kg --signal 2 ($status): $(cat "$work/err.txt")"
"$SHARDGNN" partition "$work/kgg" --parts 2 --balance ntypes,train --out "$work/kgg-p2" --verify > "$work/out.txt" 2>&1 || fail "partition kg: $(cat "$work/out.txt")"
if [ "${WITH_TORCH:-OFF}" = ON ]; then
  timeout 300 ${MPIEXEC:-mpiexec} -n 2 "$SHARDGNN" train "$work/kgg-p2" --model rgcn --fanouts 10,5 --hidden 32 --batch 64 --epochs 6 --threads 1 > "$work/out.txt" 2>&1 ||
    fail "train on the kg generator's graph: $(cat "$work/out.txt")"
  acc=$(sed -n 's/^test accuracy \([0-9.]*\),.*/\1/p' "$work/out.txt" | tail -1)
  "$py" -c "import sys; sys.exit(not float('$acc') > 0.5)" || fail "R-GCN on the kg generator's graph: test accuracy '$acc' (chance 0.125): $(cat "$work/out.txt")"
fi
echo "typed graphs: ok"
