// The one stopwatch: a steady clock and the seconds since a time point, for every timing the
// tools report (training's phases, the sampler's counters, the benchmarks).
#pragma once

#include <chrono>

namespace shardgnn {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace shardgnn
