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
};

// Runs argv (argv[0] looked up in PATH) in `cwd` (if given); stderr passes through.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd = "");


}  // namespace shardgnn::cli
