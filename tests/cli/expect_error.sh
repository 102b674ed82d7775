# Shared by the MPI CLI tests (sourced): expect_error RANKS PATTERN ARGS... runs
# `mpiexec -n RANKS shardgnn "${expect_cmd[@]}" ARGS...` and checks that it fails cleanly: exit 1,
# or $expect_rc where a test sets it (2 for a usage error), never a hang (124 is the timeout),
# every rank reporting the error, the message matching PATTERN.
# Needs: $MPIEXEC, $SHARDGNN, $work, fail(), and the array expect_cmd (e.g. (train)).
expect_error() {
  local ranks=$1 pattern=$2; shift 2
  set +e
  timeout 120 "$MPIEXEC" -n "$ranks" "$SHARDGNN" "${expect_cmd[@]}" "$@" > "$work/out.txt" 2> "$work/err.txt"
  local rc=$?
  set -e
  [ "$rc" != 124 ] || fail "'$*' hung (timeout)"
  [ "$rc" = "${expect_rc:-1}" ] || fail "'$*' on $ranks ranks exited $rc, expected ${expect_rc:-1}: $(cat "$work/err.txt")"
  local lines
  lines=$(grep -c "error: rank" "$work/err.txt" || true)
  [ "$lines" = "$ranks" ] || fail "'$*': $lines ranks reported the error, expected $ranks: $(cat "$work/err.txt")"
  grep -q -- "$pattern" "$work/err.txt" || fail "'$*' error lacks '$pattern': $(cat "$work/err.txt")"
}
