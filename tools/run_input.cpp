#include "tools/run_input.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "datasets/error.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

void load_input(const comm::Communicator& world, const std::string& dir, const std::string& scratch, const std::string& verb, Input& in) {
  comm::agree(world, [&] {
    if (fs::exists(fs::path(dir) / "partition.json")) {
      const PartitionInfo info = load_partition_info(dir);
      if (verb != "trains" && verb != "predicts") require_untyped(info.dataset.schema, dir, "this command");
      in.shard = load_shard_for_rank(info, world.rank(), world.size(), scratch);
      in.name = info.dataset.name;
      in.kind = "partitioned";
      if (const int parts = info.book.parts(), P = world.size(); parts > P)
        in.kind += ", its " + std::to_string(parts) + " parts merged " + (parts % P == 0 ? "" : "up to ") + std::to_string((parts + P - 1) / P) + " per rank";
    } else if (fs::exists(fs::path(dir) / "meta.json")) {
      if (world.size() != 1)
        throw InputError(dir + ": a dataset folder " + verb + " in one process; for " + std::to_string(world.size()) + " ranks partition it first (shardgnn partition " +
                         dir + " --parts " + std::to_string(world.size()) + " --out DIR)");
      in.dataset = load_dataset(dir);
      if (verb != "trains" && verb != "predicts") require_untyped(in.dataset.schema, dir, "this command");
      in.shard = shard_from_dataset(in.dataset);
      in.name = in.dataset.name;
      in.kind = "dataset";
    } else {
      throw InputError(dir + ": neither a partitioned dataset (partition.json) nor a dataset folder (meta.json)");
    }
  });
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Every rank's peak resident memory (mapped shard pages it touched included), rank 0 prints the
// largest and the mean (collective).
void print_peak_memory(const comm::Communicator& world) {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  const auto peaks = world.allgather<std::int64_t>(static_cast<std::int64_t>(ru.ru_maxrss));  // KiB
  if (world.rank() != 0) return;
  const auto top = std::max_element(peaks.begin(), peaks.end());
  double mean = 0;
  for (const std::int64_t p : peaks) mean += static_cast<double>(p) / static_cast<double>(peaks.size());
  std::printf("peak resident memory per rank: largest %.0f MiB (rank %td), mean %.0f MiB (%s)\n", static_cast<double>(*top) / 1024, top - peaks.begin(),
              mean / 1024, utc_now().c_str());
}

}  // namespace shardgnn::cli
