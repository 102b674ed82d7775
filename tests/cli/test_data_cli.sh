#!/usr/bin/env bash
# `shardgnn data ...` end to end (ctest: cli_data). Needs only bash, coreutils, grep and gzip.
# Environment: SHARDGNN (the binary), SAMPLES (datasets/samples), FIXTURES (tests/fixtures).
#
# Checks: convert + info --json + validate on real inputs; bad inputs exit 1 with exactly one line
# on stderr naming the file and leave nothing behind; usage errors exit 2; --help exits 0 on every
# subcommand; a flipped byte is caught by validate's checksums.
set -euo pipefail

: "${SHARDGNN:?set SHARDGNN to the shardgnn binary}"
: "${SAMPLES:?set SAMPLES to datasets/samples}"
: "${FIXTURES:?set FIXTURES to tests/fixtures}"

T="$(mktemp -d "${TMPDIR:-/tmp}/shardgnn-cli.XXXXXX")"
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/logs" "$T/in" "$T/work"
OUT="$T/logs/stdout"
ERR="$T/logs/stderr"
checks=0

fail() {
  echo "FAIL: $*" >&2
  if [[ -s "$OUT" ]]; then echo "--- stdout:" >&2; head -n 20 "$OUT" >&2; fi
  if [[ -s "$ERR" ]]; then echo "--- stderr:" >&2; head -n 20 "$ERR" >&2; fi
  exit 1
}
pass() { checks=$((checks + 1)); }

# run ARGS...: runs the binary, keeping its exit code in $rc and its output in $OUT / $ERR.
run() {
  set +e
  "$SHARDGNN" "$@" >"$OUT" 2>"$ERR"
  rc=$?
  set -e
}
expect_rc() { # expect_rc N WHAT
  [[ "$rc" -eq "$1" ]] || fail "$2: exit code $rc, expected $1"
  pass
}
# The stderr of a failed command: exactly one line, containing each of the given strings.
expect_one_line_error() { # expect_one_line_error WHAT STRING...
  local what="$1"
  shift
  local lines
  lines=$(wc -l <"$ERR")
  [[ "$lines" -eq 1 ]] || fail "$what: $lines lines on stderr, expected exactly one"
  for s in "$@"; do
    grep -qF -- "$s" "$ERR" || fail "$what: stderr does not mention '$s'"
  done
  pass
}
expect_empty_dir() { # expect_empty_dir DIR WHAT
  [[ -d "$1" ]] || fail "$2: folder $1 has disappeared"
  [[ -z "$(ls -A "$1")" ]] || fail "$2: left behind in $1: $(ls -A "$1" | tr '\n' ' ')"
  pass
}
# A key of `data info --json` (pretty-printed, one key per line) must have the given value.
expect_json() { # expect_json KEY VALUE
  grep -qE "^ *\"$1\": $2,?\$" "$OUT" || fail "info --json: expected \"$1\": $2, got: $(grep -E "\"$1\"" "$OUT" || echo nothing)"
  pass
}

# ---------------------------------------------------------------------------------------------
# convert, info, validate on real inputs

run data convert "$SAMPLES/cora.npz" --out "$T/work/cora"
expect_rc 0 "convert cora.npz"
[[ ! -s "$ERR" ]] || fail "convert cora.npz: unexpected stderr"
grep -qF "2708 nodes, 10556 directed edges, 1433 features, 7 classes, split 140/500/1000" "$OUT" ||
  fail "convert cora.npz: summary line"
[[ -f "$T/work/cora/meta.json" ]] || fail "convert cora.npz: no meta.json"
[[ "$(ls -A "$T/work")" == "cora" ]] || fail "convert cora.npz: temporary files next to the output: $(ls -A "$T/work" | tr '\n' ' ')"
pass

run data info --json "$T/work/cora"
expect_rc 0 "info --json cora"
expect_json name '"cora"'
expect_json nodes 2708
expect_json directed_edges 10556
expect_json undirected_edges 5278
expect_json feature_dim 1433
expect_json num_classes 7
expect_json labelled_nodes 2708
expect_json train 140
expect_json val 500
expect_json test 1000
expect_json isolated_nodes 0
expect_json self_loops 0
expect_json symmetric true

# A dataset folder as input is rewritten in this build's format (an older version's, int64 ids,
# comes out with int32 ones): the same arrays; --feature-dtype changes its features; cleaning
# options do not apply to it.
run data convert "$T/work/cora" --out "$T/work/cora-again"
expect_rc 0 "convert a dataset folder"
grep -A2 '"indices"' "$T/work/cora-again/meta.json" | grep -qF '"<i4"' || fail "convert a dataset folder: indices not int32"
for f in indptr indices features labels train_idx val_idx test_idx; do
  cmp -s "$T/work/cora/$f.npy" "$T/work/cora-again/$f.npy" || fail "convert a dataset folder: $f.npy differs"
done
run data convert "$T/work/cora-again" --out "$T/work/cora-f16" --feature-dtype float16
expect_rc 0 "convert a dataset folder --feature-dtype float16"
grep -qF '"feature_dtype": "float16"' "$T/work/cora-f16/meta.json" || fail "convert a dataset folder --feature-dtype: not float16"
run data convert "$T/work/cora" --out "$T/work/cora-sym" --symmetrize
expect_rc 2 "convert a dataset folder --symmetrize"
expect_one_line_error "convert a dataset folder --symmetrize" "does not apply to a dataset folder"
[[ ! -e "$T/work/cora-sym" ]] || fail "convert a dataset folder --symmetrize: wrote output"
rm -rf "$T/work/cora-again" "$T/work/cora-f16"
pass

# Cora's largest component (Shchur et al.'s protocol): 2485 nodes, 5069 undirected edges.
run data convert "$SAMPLES/cora.npz" --largest-component --out "$T/work/cora-lcc"
expect_rc 0 "convert --largest-component"
grep -qF "kept 2485 of 2708 nodes (the largest of 78 components)" "$OUT" || fail "convert --largest-component: no report line"
run data info --json "$T/work/cora-lcc"
expect_json nodes 2485
expect_json undirected_edges 5069
expect_json isolated_nodes 0
run data validate "$T/work/cora-lcc"
expect_rc 0 "validate cora-lcc"
rm -rf "$T/work/cora-lcc"

run data info "$T/work/cora"
expect_rc 0 "info cora"
grep -qE "^nodes +2708$" "$OUT" || fail "info cora: nodes line"
grep -qE "^split +train 140, val 500, test 1000$" "$OUT" || fail "info cora: split line"
pass

run data validate "$T/work/cora"
expect_rc 0 "validate cora"
grep -qF "valid" "$OUT" || fail "validate cora: no 'valid' on stdout"
pass

run data validate --json "$T/work/cora"
expect_rc 0 "validate --json cora"
grep -qE '"valid": true' "$OUT" || fail "validate --json cora: not valid"
pass

# The OGB fixture, symmetrised: 9 reverse entries added (see tests/datasets/test_readers.cpp).
run data convert "$FIXTURES/ogb-tiny" --out "$T/work/ogb" --symmetrize --name tiny
expect_rc 0 "convert ogb-tiny"
grep -qF "added 9 reverse entries" "$OUT" || fail "convert ogb-tiny: cleaning report"
pass
run data info --json "$T/work/ogb"
expect_rc 0 "info --json ogb-tiny"
expect_json name '"tiny"'
expect_json nodes 10
expect_json directed_edges 20
expect_json undirected_edges 10
expect_json feature_dim 3
expect_json num_classes 3
expect_json labelled_nodes 9
expect_json train 5
expect_json val 2
expect_json test 2
expect_json isolated_nodes 1
expect_json symmetric true
run data validate "$T/work/ogb"
expect_rc 0 "validate ogb-tiny"

# A SNAP-style gzip edge list with non-contiguous ids.
printf '# comment\n10\t20\n20\t30\n30\t10\n' | gzip -n >"$T/in/snap.txt.gz"
run data convert "$T/in/snap.txt.gz" --out "$T/work/snap"
expect_rc 0 "convert snap.txt.gz"
run data info --json "$T/work/snap"
expect_rc 0 "info --json snap"
expect_json name '"snap"'
expect_json nodes 3
expect_json directed_edges 3
expect_json symmetric false
[[ -f "$T/work/snap/node_ids.npy" ]] || fail "convert snap.txt.gz: no node_ids.npy for relabelled ids"
pass

# An existing output folder is refused without --force, and left as it was.
before="$(ls -l "$T/work/ogb"; cat "$T/work/ogb/meta.json")"
run data convert "$SAMPLES/cora.npz" --out "$T/work/ogb"
expect_rc 1 "convert onto an existing folder"
expect_one_line_error "convert onto an existing folder" "$T/work/ogb" "--force"
[[ "$(ls -l "$T/work/ogb"; cat "$T/work/ogb/meta.json")" == "$before" ]] || fail "convert onto an existing folder: folder changed"
pass
run data convert "$SAMPLES/cora.npz" --out "$T/work/ogb" --force
expect_rc 0 "convert --force"
run data info --json "$T/work/ogb"
expect_json nodes 2708

# ---------------------------------------------------------------------------------------------
# Bad inputs: exit 1, one line naming the file, nothing written.

printf '' >"$T/in/empty.txt"
printf '4 3\n2 3\n1 3\n' >"$T/in/short.graph"
printf '0 1\n1 two\n' >"$T/in/words.txt"
printf '0 1\n1 2\n2 9\n' >"$T/in/range.txt"
printf 'not a zip\n' >"$T/in/magic.npz"
head -c 100000 "$SAMPLES/cora.npz" >"$T/in/cut.npz"
for i in $(seq 1 3000); do echo "$((i * 7919 % 10007)) $((i * 104729 % 10007))"; done | gzip -n >"$T/in/cut.txt.gz.full"
size=$(wc -c <"$T/in/cut.txt.gz.full")
head -c $((size / 2)) "$T/in/cut.txt.gz.full" >"$T/in/cut.txt.gz"
cp -R "$FIXTURES/ogb-tiny" "$T/in/ogb-nan"
printf '1,2,3\n1,2,3\n1,nan,3\n1,2,3\n1,2,3\n1,2,3\n1,2,3\n1,2,3\n1,2,3\n1,2,3\n' | gzip -n >"$T/in/ogb-nan/raw/node-feat.csv.gz"

n=0
# bad_input NAME FILE_SHOWN EXTRA_STRING ARGS...: converts into a fresh empty folder and checks.
bad_input() {
  local what="$1" shown="$2" extra="$3"
  shift 3
  n=$((n + 1))
  local parent="$T/work/bad$n"
  mkdir -p "$parent"
  run data convert "$@" --out "$parent/out"
  expect_rc 1 "$what"
  expect_one_line_error "$what" "$shown" "$extra"
  expect_empty_dir "$parent" "$what"
}
bad_input "empty edge list" empty.txt "empty file" "$T/in/empty.txt"
bad_input "truncated METIS" short.graph "vertex lines" "$T/in/short.graph"
bad_input "non-numeric id" words.txt "line 2" "$T/in/words.txt"
bad_input "id beyond --num-nodes" range.txt "line 3" "$T/in/range.txt" --num-nodes 5
bad_input "wrong magic npz" magic.npz "wrong magic" "$T/in/magic.npz"
bad_input "truncated npz" cut.npz "truncated" "$T/in/cut.npz"
bad_input "truncated gzip" cut.txt.gz "gzip" "$T/in/cut.txt.gz"
bad_input "NaN OGB feature" node-feat.csv.gz "line 3" "$T/in/ogb-nan"
bad_input "missing input" nonexistent.txt "no such file" "$T/in/nonexistent.txt"
bad_input "binary npz read as METIS" cora.npz "line 1, column 1" "$SAMPLES/cora.npz" --format metis

# A failure while writing: the output's parent is a file. Nothing but that file remains.
mkdir -p "$T/work/badwrite"
printf 'precious' >"$T/work/badwrite/file"
run data convert "$FIXTURES/ogb-tiny" --out "$T/work/badwrite/file/out"
expect_rc 1 "output parent is a file"
expect_one_line_error "output parent is a file" "$T/work/badwrite/file/out"
[[ "$(ls -A "$T/work/badwrite")" == "file" && "$(cat "$T/work/badwrite/file")" == "precious" ]] ||
  fail "output parent is a file: left behind: $(ls -A "$T/work/badwrite" | tr '\n' ' ')"
pass

# --force replaces a shardgnn dataset, never a folder of the user's own files.
mkdir -p "$T/work/mine"
printf 'precious' >"$T/work/mine/notes.txt"
run data convert "$FIXTURES/ogb-tiny" --out "$T/work/mine" --force
expect_rc 1 "--force on a user folder"
expect_one_line_error "--force on a user folder" "--force replaces only those"
[[ "$(ls -A "$T/work/mine")" == "notes.txt" && "$(cat "$T/work/mine/notes.txt")" == "precious" ]] || fail "--force on a user folder changed it"
run data convert "$FIXTURES/ogb-tiny" --out "$T/work/ours"
expect_rc 0 "convert into a fresh folder"
run data convert "$FIXTURES/ogb-tiny" --out "$T/work/ours" --force
expect_rc 0 "--force on a shardgnn dataset"
pass

# A temporary folder left by a process that died is removed by the next writer (and data
# validate), which says so; a live process's is left alone.
sh -c 'exit 0' & dead=$!
wait "$dead"
host=$(hostname)
mkdir -p "$T/work/ours.tmp-$host-$dead-0" "$T/work/ours.tmp-$host-$$-0"
run data validate "$T/work/ours"
expect_rc 0 "validate beside a stale temporary"
grep -q "removed .*ours.tmp-$host-$dead-0, left by process $dead, which no longer runs" "$ERR" || fail "validate did not say it removed the stale temporary: $(cat "$ERR")"
[[ ! -e "$T/work/ours.tmp-$host-$dead-0" && -d "$T/work/ours.tmp-$host-$$-0" ]] || fail "stale temporaries: wrong folders removed"
mkdir -p "$T/work/ours.tmp-$host-$dead-1"
run data convert "$FIXTURES/ogb-tiny" --out "$T/work/ours" --force
expect_rc 0 "convert beside a stale temporary"
[[ ! -e "$T/work/ours.tmp-$host-$dead-1" ]] || fail "convert left the stale temporary"
rmdir "$T/work/ours.tmp-$host-$$-0"
pass

# info / validate on something that is not a dataset folder.
run data info "$T/in"
expect_rc 1 "info on a non-dataset folder"
expect_one_line_error "info on a non-dataset folder" "meta.json"
run data validate "$T/in/empty.txt"
expect_rc 1 "validate on a file"
expect_one_line_error "validate on a file" "empty.txt"

# No temporary file anywhere after all of the above.
leftovers="$(find "$T/work" -name '*.tmp-*')"
[[ -z "$leftovers" ]] || fail "temporary files left behind: $leftovers"
pass

# ---------------------------------------------------------------------------------------------
# Usage errors: exit 2, one line pointing at --help.

usage_error() { # usage_error WHAT ARGS...
  local what="$1"
  shift
  run "$@"
  expect_rc 2 "$what"
  expect_one_line_error "$what" "--help"
}
usage_error "unknown option" data convert "$SAMPLES/cora.npz" --out "$T/work/u1" --bogus
usage_error "missing --out" data convert "$SAMPLES/cora.npz"
usage_error "missing input" data convert --out "$T/work/u2"
usage_error "non-numeric option value" data convert "$SAMPLES/cora.npz" --out "$T/work/u3" --num-nodes many
usage_error "unknown data command" data frobnicate
usage_error "missing dataset argument" data info
usage_error "generate without a generator" data generate
usage_error "generate sbm without --out" data generate sbm --nodes 10
[[ ! -e "$T/work/u1" && ! -e "$T/work/u2" && ! -e "$T/work/u3" ]] || fail "usage errors wrote output"
pass
run frobnicate
expect_rc 2 "unknown command"

# ---------------------------------------------------------------------------------------------
# --help everywhere: exit 0, usage on stdout, nothing on stderr.

for args in "--help" "data --help" "data convert --help" "data generate --help" "data generate rmat --help" \
  "data generate sbm --help" "data info --help" "data validate --help" "bench --help" "bench data --help" \
  "data convert -h"; do
  # shellcheck disable=SC2086  # split on purpose
  run $args
  expect_rc 0 "'$args'"
  grep -qi "usage" "$OUT" || fail "'$args': no usage text on stdout"
  [[ ! -s "$ERR" ]] || fail "'$args': unexpected stderr"
  pass
done

# ---------------------------------------------------------------------------------------------
# A flipped byte in a converted dataset: validate exits 1 and names the file and the checksum.

f="$T/work/cora/features.npy"
off=$(($(wc -c <"$f") - 1))
cur=$(od -An -tu1 -j "$off" -N1 "$f" | tr -d ' ')
new=$(((cur + 1) % 256))
# shellcheck disable=SC2059  # the format is the byte
printf "$(printf '\\%03o' "$new")" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
[[ "$(od -An -tu1 -j "$off" -N1 "$f" | tr -d ' ')" == "$new" ]] || fail "could not flip a byte of $f"
run data validate "$T/work/cora"
expect_rc 1 "validate after a flipped byte"
grep -qF "features.npy" "$ERR" || fail "validate after a flipped byte: features.npy not named"
grep -qF "checksum" "$ERR" || fail "validate after a flipped byte: checksum not named"
pass
run data validate --json "$T/work/cora"
expect_rc 1 "validate --json after a flipped byte"
grep -qE '"valid": false' "$OUT" || fail "validate --json after a flipped byte: not reported invalid"
pass

# ---------------------------------------------------------------------------------------------
# R-MAT built through bucket files on disk (a memory limit below the in-memory build's need) is
# the in-memory build, byte for byte, and leaves no scratch folder; an existing output folder is
# refused before any work.
rmat=(data generate rmat --scale 12 --edge-factor 8 --seed 5 --symmetrize --drop-self-loops --drop-duplicates)
run "${rmat[@]}" --out "$T/work/rmat-mem"
expect_rc 0 "rmat in memory"
run "${rmat[@]}" --out "$T/work/rmat-disk" --memory-limit 256k
expect_rc 0 "rmat through bucket files"
grep -qF "building the graph through files on disk" "$OUT" || fail "rmat --memory-limit 256k: did not say it built through bucket files"
for f in indptr.npy indices.npy; do
  cmp -s "$T/work/rmat-mem/$f" "$T/work/rmat-disk/$f" || fail "rmat through bucket files: $f differs from the in-memory build"
done
pass
[[ -z "$(find "$T/work" -maxdepth 1 -name '*.scratch-*')" ]] || fail "rmat through bucket files left a scratch folder"
pass
run data validate "$T/work/rmat-disk"
expect_rc 0 "validate the rmat built through bucket files"
run "${rmat[@]}" --out "$T/work/rmat-disk" --memory-limit 256k
expect_rc 1 "rmat into an existing folder"
expect_one_line_error "rmat into an existing folder" "rmat-disk" "--force"
grep -qF "building" "$OUT" && fail "rmat into an existing folder: started building before refusing"
pass
usage_error "a memory limit that is not a size" data generate rmat --scale 4 --out "$T/work/u4" --memory-limit lots
# The SBM the same way: its graph through bucket files, every array as in memory.
sbm=(data generate sbm --nodes 4000 --feature-dim 4 --seed 3)
run "${sbm[@]}" --out "$T/work/sbm-mem"
expect_rc 0 "sbm in memory"
run "${sbm[@]}" --out "$T/work/sbm-disk" --memory-limit 64k
expect_rc 0 "sbm through bucket files"
grep -qF "building the graph through files on disk" "$OUT" || fail "sbm --memory-limit 64k: did not say it built through bucket files"
for f in indptr.npy indices.npy features.npy labels.npy train_idx.npy; do
  cmp -s "$T/work/sbm-mem/$f" "$T/work/sbm-disk/$f" || fail "sbm through bucket files: $f differs from the in-memory build"
done
[[ -z "$(find "$T/work" -maxdepth 1 -name '*.scratch-*')" ]] || fail "sbm through bucket files left a scratch folder"
pass
# An edge list with gaps in its ids (relabelled, the mapping kept) and the same list gzipped:
# converted through bucket files, the same arrays as in memory.
run data generate rmat --scale 11 --edge-factor 8 --seed 9 --edge-list "$T/in/rmat.txt"
expect_rc 0 "rmat edge list"
awk '{print 3 * $1 + 7, 3 * $2 + 7}' "$T/in/rmat.txt" >"$T/in/gaps.txt"
gzip -c "$T/in/gaps.txt" >"$T/in/gaps.txt.gz"
run data convert "$T/in/gaps.txt" --symmetrize --drop-self-loops --out "$T/work/gaps-mem"
expect_rc 0 "edge list in memory"
for input in gaps.txt gaps.txt.gz; do
  run data convert "$T/in/$input" --symmetrize --drop-self-loops --out "$T/work/$input-disk" --memory-limit 64k
  expect_rc 0 "$input through bucket files"
  grep -qF "building the graph through files on disk" "$OUT" || fail "$input --memory-limit 64k: did not say it built through bucket files"
  for f in indptr.npy indices.npy node_ids.npy; do
    cmp -s "$T/work/gaps-mem/$f" "$T/work/$input-disk/$f" || fail "$input through bucket files: $f differs from the in-memory build"
  done
  pass
done
[[ -z "$(find "$T/work" -maxdepth 1 -name '*.scratch-*')" ]] || fail "edge lists through bucket files left a scratch folder"
pass

echo "cli_data: all $checks checks passed"
