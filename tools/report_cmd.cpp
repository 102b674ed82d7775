// `shardgnn report <run-dir|metrics.jsonl> [--svg FILE] [--json]`: a per-rank view of a training
// run for diagnosing load imbalance (see tools/run_report.hpp). No torch: it reads the metrics file.
#include <filesystem>
#include <iostream>

#include "datasets/fileio.hpp"
#include "datasets/json_util.hpp"
#include "tools/cli.hpp"
#include "tools/run_report.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

int report_main(const std::vector<std::string>& args) {
  g_command = "shardgnn report";
  po::options_description o("options");
  o.add_options()
      ("svg", po::value<std::string>(), "write the figure here (default: report.svg in the run folder, the metrics file's folder)")
      ("json", "print the summary as JSON instead of the table (and write the figure only if --svg is given)");
  po::variables_map vm;
  if (!parse(args,
             "shardgnn report <run-dir|metrics.jsonl> [--svg FILE] [--json]\n\n"
             "A training run per rank, from the metrics written by 'shardgnn train --metrics FILE' (one JSON line per\n"
             "epoch): per-rank seeds, sampled edges, remote rows, traffic and time (sample, fetch, batch wait, compute,\n"
             "all-reduce), busy time (own work: compute and sampling, no waiting) per epoch and per step; per epoch the imbalance max/mean busy,\n"
             "the slowest rank and any rebalancing; best and last accuracy. The SVG shows each rank's time per epoch.",
             o, {"run"}, vm))
    return 0;
  const RunMetrics run = load_run_metrics(vm["run"].as<std::string>());
  const RunSummary summary = summarize_run(run);
  const bool json = vm.count("json") > 0;
  // The figure first: a failure to write it must not follow a table that looks like success.
  std::string svg;
  if (!json || vm.count("svg")) {
    svg = vm.count("svg") ? vm["svg"].as<std::string>() : (fs::path(run.dir) / "report.svg").string();
    write_text_file_atomic(svg, render_run_svg(summary, run));
  }
  if (json) {
    std::cout << pretty_json(run_summary_json(summary));
  } else {
    std::cout << render_run_table(summary) << "\nfigure: " << svg << "\n";
  }
  return 0;
}

}  // namespace shardgnn::cli
