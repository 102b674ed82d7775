#include "trainer/stop.hpp"

#include "comm/launcher.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace shardgnn {

namespace {

std::atomic<int> g_signal{0};
std::atomic<pid_t> g_sender{0};  // who sent the first stop signal (0: the kernel)

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
      StopSignals signals;
      for (;;) {
        siginfo_t info{};
        const int sig = sigwaitinfo(&set, &info);
        if (sig <= 0) continue;
        const pid_t sender = info.si_code == SI_USER || info.si_code == SI_QUEUE ? info.si_pid : 0;
        switch (signals.receive(sender, std::chrono::steady_clock::now())) {
          case StopSignals::Action::first:
            g_sender.store(sender);
            request_stop(sig);
            break;
          case StopSignals::Action::duplicate: break;
          case StopSignals::Action::second:
            // The user (or the batch system) will not wait for the step to end.
            std::fprintf(stderr, "shardgnn: a second stop signal (%s), exiting now\n", signal_name(sig));
            std::fflush(stderr);
            std::_Exit(128 + sig);
        }
      }
    }).detach();
  });
}

StopSignals::Action StopSignals::receive(pid_t sender, std::chrono::steady_clock::time_point when) noexcept {
  if (!seen_) {
    seen_ = true;
    first_sender_ = sender;
    first_when_ = when;
    return Action::first;
  }
  // The same process asking again (a terminal's Ctrl-C twice, scancel twice) means it, unless it
  // comes at once (a launcher passing on two copies); another process just after the first is the
  // first request taking a second path to this rank.
  if (when - first_when_ <= kEchoWindow) return Action::duplicate;
  if (sender != first_sender_ && when - first_when_ <= kDuplicateWindow) return Action::duplicate;
  return Action::second;
}

void keep_exit_status_for_launcher() noexcept { comm::keep_exit_status_for_proxy(g_sender.load()); }

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
