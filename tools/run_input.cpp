#include "tools/run_input.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace shardgnn::cli {

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
