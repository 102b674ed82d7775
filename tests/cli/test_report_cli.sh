#!/usr/bin/env bash
# `shardgnn report` end to end (ctest: cli_report) on the hand-written run in
# tests/fixtures/run-report (2 epochs x 2 ranks, numbers chosen so the summary is easy to check by
# hand): the table's numbers, the SVG (well-formed XML), --json, --svg, a file without per-rank
# data; bad inputs exit 1 with one stderr line naming the file and line, and write nothing.
# Environment: SHARDGNN (the binary), FIXTURES (tests/fixtures).
set -euo pipefail
: "${SHARDGNN:?set SHARDGNN to the shardgnn binary}" "${FIXTURES:?set FIXTURES to tests/fixtures}"
work=$(mktemp -d "${TMPDIR:-/tmp}/shardgnn-report.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
checks=0
pass() { checks=$((checks + 1)); }

# Well-formed XML, by xmllint when installed.
svg_ok() {
  if command -v xmllint > /dev/null; then
    xmllint --noout "$1" || fail "$1 is not well-formed XML"
  fi
  grep -q '^<svg ' "$1" && tail -n 1 "$1" | grep -q '^</svg>$' || fail "$1 is not an SVG document"
  grep -q '<script' "$1" && fail "$1 has a script"
  pass
}
# A line of the table, with runs of spaces squeezed to one, must be present.
expect_line() {  # expect_line FILE TEXT
  grep -qF -- "$2" <<<"$(tr -s ' ' < "$1")" || fail "expected a line with '$2' in: $(cat "$1")"
  pass
}

# The fixture run, copied (the report writes report.svg into the run folder).
cp -r "$FIXTURES/run-report" "$work/run"
rm -f "$work/run/report.svg"
"$SHARDGNN" report "$work/run" > "$work/table.txt" || fail "report of the fixture run failed"
# Per epoch: epoch 0 busy 2.0 and 3.0 -> max 3.000, mean 2.500, ratio 1.20, rank 1 slowest;
# epoch 1 busy 2.4 and 2.6 -> 2.600, 2.500, 1.04, rank 1, after a rebalance that moved 100 seeds.
expect_line "$work/table.txt" " 0 3.50 1.5000 0.7000 3.000 2.500 1.20 1 1.000 -"
expect_line "$work/table.txt" " 1 3.00 1.1000 0.7500 2.600 2.500 1.04 1 0.200 cost, moved 100 seeds"
# Per rank: seeds/ep, steps, edges, remote rows, hit %, same-node rows (0: the fixture predates them), MB moved, sample, fetch, wait, compute,
# all-reduce, busy s/epoch ((2.0 + 2.4) / 2, (3.0 + 2.6) / 2), busy ms/step (over 20 steps), slowest.
expect_line "$work/table.txt" " 0 1050 20 420k 4.20k 25.0 0 6.0 0.85 0.45 0.90 3.50 1.20 2.200 220.00 0/2"
expect_line "$work/table.txt" " 1 1350 20 580k 5.80k 50.0 0 2.0 1.15 0.60 1.00 4.60 0.20 2.800 280.00 2/2"
expect_line "$work/table.txt" "max/mean busy 1.12 on average, worst 1.20 (epoch 0)"
expect_line "$work/table.txt" "best val 0.7500 (epoch 1, test there 0.7400)"
expect_line "$work/table.txt" "last (epoch 1) val 0.7500 test 0.7400"
[ -f "$work/run/report.svg" ] || fail "no report.svg in the run folder"
svg_ok "$work/run/report.svg"
grep -q 'rank 1: busy 2.800 s/epoch' "$work/run/report.svg" || fail "the SVG lacks rank 1's panel"
ls -A "$work/run" | grep -q tmp && fail "temporary files left in the run folder: $(ls -A "$work/run")"

# The metrics file itself, --svg elsewhere.
"$SHARDGNN" report "$work/run/metrics.jsonl" --svg "$work/other.svg" > "$work/table2.txt" || fail "report of a metrics file failed"
svg_ok "$work/other.svg"
expect_line "$work/table2.txt" "figure: $work/other.svg"

# --json: valid JSON on stdout, the same numbers; no figure unless --svg.
rm -f "$work/run/report.svg"
"$SHARDGNN" report "$work/run" --json > "$work/summary.json" || fail "report --json failed"
[ ! -e "$work/run/report.svg" ] || fail "report --json wrote a figure without --svg"
python3 - "$work/summary.json" <<'PY' || fail "report --json: unexpected summary: $(cat "$work/summary.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["ranks"] == 2 and s["epochs"] == 2, s
e0, e1 = s["per_epoch"]
assert abs(e0["max_busy_s"] - 3.0) < 1e-9 and abs(e0["mean_busy_s"] - 2.5) < 1e-9 and abs(e0["max_over_mean_busy"] - 1.2) < 1e-9, e0
assert e0["slowest_rank"] == 1 and e1["rebalance"]["moved"] == 100 and e1["rebalance"]["policy"] == "cost", e1
r0, r1 = s["per_rank"]
assert abs(r0["busy_per_epoch_s"] - 2.2) < 1e-9 and abs(r1["busy_per_step_s"] - 0.28) < 1e-9, (r0, r1)
assert abs(s["imbalance"]["mean_max_over_mean_busy"] - 1.12) < 1e-9, s["imbalance"]
assert s["accuracy"]["best_val"] == 0.75 and s["accuracy"]["best_val_epoch"] == 1, s["accuracy"]
PY
pass

# An older file without per-rank data: what there is, and that per-rank data is absent.
"$SHARDGNN" report "$work/run/no-ranks.jsonl" --svg "$work/no-ranks.svg" > "$work/old.txt" || fail "report of a file without ranks failed"
expect_line "$work/old.txt" "per-rank absent"
expect_line "$work/old.txt" " 1 1.50 1.2000 0.7600 0.20 0.75 0.10 0.30"
svg_ok "$work/no-ranks.svg"

# A resumed run re-logs epochs: the later line wins, and the table says so.
{ head -n 1 "$work/run/metrics.jsonl"; cat "$work/run/metrics.jsonl"; } > "$work/resumed.jsonl"
"$SHARDGNN" report "$work/resumed.jsonl" --svg "$work/resumed.svg" > "$work/resumed.txt" || fail "report of a resumed run failed"
expect_line "$work/resumed.txt" "epochs 2, 6.50 s in all"
expect_line "$work/resumed.txt" "1 earlier lines of re-run epochs superseded"

# Errors: exit 1 (2 for the command line), one stderr line with the file and line, nothing written.
mkdir "$work/bad"
expect_error() {  # expect_error RC PATTERN ARGS...
  local want=$1 pattern=$2
  shift 2
  set +e
  "$SHARDGNN" report "$@" > "$work/out.txt" 2> "$work/err.txt"
  local rc=$?
  set -e
  [ "$rc" = "$want" ] || fail "'report $*' exited $rc, expected $want ($(cat "$work/err.txt"))"
  [ "$(wc -l < "$work/err.txt")" = 1 ] || fail "'report $*' printed $(wc -l < "$work/err.txt") stderr lines: $(cat "$work/err.txt")"
  grep -qF -- "$pattern" "$work/err.txt" || fail "'report $*' error lacks '$pattern': $(cat "$work/err.txt")"
  [ -z "$(ls -A "$work/bad" | grep -v '\.jsonl$' || true)" ] || fail "'report $*' left files behind: $(ls -A "$work/bad")"
  pass
}
expect_error 1 "$work/missing: no such file or folder" "$work/missing"
expect_error 1 "$work/bad: no metrics.jsonl in this folder" "$work/bad"
: > "$work/bad/metrics.jsonl"
expect_error 1 "$work/bad/metrics.jsonl: line 1: empty file" "$work/bad"
{ head -n 2 "$work/run/metrics.jsonl"; echo '{"epoch": 2, "epoch_s": 1.0,'; } > "$work/bad/metrics.jsonl"
expect_error 1 "$work/bad/metrics.jsonl: line 3, column" "$work/bad"
grep -q "invalid JSON" "$work/err.txt" || fail "bad JSON: $(cat "$work/err.txt")"
printf '{"epoch":0,"epoch_s":1}\n[1,2]\n' > "$work/bad/metrics.jsonl"
expect_error 1 "$work/bad/metrics.jsonl: line 2: expected a JSON object" "$work/bad"
printf '{"epoch":0,"epoch_s":1}\n\n{"epoch":1,"loss":0.5}\n' > "$work/bad/metrics.jsonl"
expect_error 1 "$work/bad/metrics.jsonl: line 3: key 'epoch_s': missing, expected a number" "$work/bad"
sed -e '2s/"busy_s":2.6,//' "$work/run/metrics.jsonl" > "$work/bad/metrics.jsonl"
expect_error 1 "line 2: key 'ranks[1].busy_s': missing" "$work/bad"
sed -e '2s/"compute":2.0,/"compute":"2.0",/' "$work/run/metrics.jsonl" > "$work/bad/metrics.jsonl"
expect_error 1 "line 2: key 'ranks[0].time_s.compute': expected a number" "$work/bad"
sed -e '2s/"rank":1,/"rank":0,/' "$work/run/metrics.jsonl" > "$work/bad/metrics.jsonl"
expect_error 1 "line 2: ranks[1].rank: rank 0 appears twice" "$work/bad"
expect_error 1 "no-such.svg" "$work/run" --svg "$work/no-such-dir/no-such.svg"
expect_error 2 "missing argument <run>"
grep -q "per rank" <<<"$("$SHARDGNN" report --help)" || fail "report --help"
pass
echo "report CLI: all $checks checks passed"
