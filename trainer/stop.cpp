#include "trainer/stop.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace shardgnn {

namespace {

std::atomic<int> g_signal{0};

}  // namespace

void take_stop_signals(char** argv) {
  static std::once_flag once;
  std::call_once(once, [argv] {
    const sigset_t set = stop_signal_set();
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, &set, &before);
    // Threads that libraries started as they loaded (OpenBLAS's) did not inherit the mask: start
    // again, blocked from the start (a mask survives exec), so that no thread takes a signal.
    if (argv != nullptr && (!sigismember(&before, SIGTERM) || !sigismember(&before, SIGINT) || !sigismember(&before, SIGUSR1))) {
      execv("/proc/self/exe", argv);
      std::fprintf(stderr, "shardgnn: warning: cannot restart with the stop signals blocked; SIGTERM and SIGINT may end the run without a checkpoint\n");
    }
    std::thread([set] {
      for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (request_stop(sig)) continue;
        // A second signal: the user (or the batch system) will not wait for the step to end.
        std::fprintf(stderr, "shardgnn: a second stop signal (%s), exiting now\n", signal_name(sig));
        std::fflush(stderr);
        std::_Exit(128 + sig);
      }
    }).detach();
  });
}

int stop_signal() noexcept { return g_signal.load(); }

bool request_stop(int sig) noexcept {
  int none = 0;
  return g_signal.compare_exchange_strong(none, sig);
}

void clear_stop() noexcept { g_signal.store(0); }

const char* signal_name(int sig) noexcept {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

}  // namespace shardgnn
