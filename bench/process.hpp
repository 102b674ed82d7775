// Running a child process for the benchmarks: stdout captured, wall time and peak RSS measured.
#pragma once

#include <string>
#include <vector>

namespace shardgnn::cli {

struct ProcessResult {
  int status = -1;      // exit status, or 128 + signal
  double wall_s = 0;
  double peak_rss_mb = 0;  // the child's peak resident memory (wait4)
  // The largest anonymous resident memory (RssAnon) of any process of the child's tree, sampled
  // while it runs: what mapped files (page cache) do not inflate.
  double peak_anon_mb = 0;
  std::string out;         // its stdout
  std::string err_tail;    // the last few KiB of its stderr (which also passes through)
};

// Runs argv (argv[0] looked up in PATH) in `cwd` (if given); stderr passes through, its tail kept.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd = "");

// The last non-blank line of `text` (a failed program's own error line: a Python traceback's last
// line, a one-line error of ours), or "" when it printed nothing.
std::string last_line(const std::string& text);

// Why a run failed, in one line: its exit status (or signal) and its own last error line.
std::string failure_line(const ProcessResult& r);

// A run a benchmark asked for, as its failure report needs it: who ran where, and why it failed
// (empty: it ran).
struct RunOutcome {
  std::string who;
  std::string error;
};

// A benchmark never hides a failure: prints "<command>: <who> failed: <error>" to stderr for each
// failed run, and returns the benchmark's exit status (1 when any failed, else 0).
int report_failures(const std::string& command, const std::vector<RunOutcome>& runs);


}  // namespace shardgnn::cli
