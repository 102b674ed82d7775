// Independent per-part work spread over the cores: used where each of K parts can be processed
// on its own (writing shards, measuring them).
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace shardgnn {

// The most threads for_each_part_parallel uses (0: one per core). A benchmark running beside
// another program can hold it to its own core.
inline std::atomic<unsigned>& part_threads_limit() {
  static std::atomic<unsigned> limit{0};
  return limit;
}

// Calls work(k, scratch) for every k in [0, count), on up to one thread per core; each thread
// makes its own scratch with make_scratch() once and takes the next k until none is left. An
// exception from any call stops the others taking more work and is rethrown here, after every
// thread has finished (nothing escapes a thread, which would end the process).
template <class MakeScratch, class Work>
void for_each_part_parallel(int count, MakeScratch make_scratch, Work work) {
  std::atomic<int> next{0};
  std::mutex error_mu;
  std::exception_ptr error;
  auto worker = [&] {
    try {
      auto scratch = make_scratch();
      for (int k; (k = next++) < count;) work(k, scratch);
    } catch (...) {
      std::lock_guard lock(error_mu);
      if (!error) error = std::current_exception();
      next = count;
    }
  };
  const unsigned limit = part_threads_limit().load();
  const unsigned cores = limit > 0 ? limit : std::thread::hardware_concurrency();
  const unsigned workers = std::max(1u, std::min<unsigned>(cores, static_cast<unsigned>(std::max(count, 1))));
  std::vector<std::thread> pool;
  try {
    for (unsigned w = 1; w < workers; ++w) pool.emplace_back(worker);
  } catch (const std::system_error&) {
    // No thread to spare: the threads already started and this one share the work.
  }
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace shardgnn
