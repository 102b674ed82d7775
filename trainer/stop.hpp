// Stopping a training job cleanly on a signal, as batch systems ask: SLURM sends SIGTERM at
// preemption, scancel and the end of --time (after its KillWait grace), SIGUSR1 when a job asks
// for --signal=USR1@N, and a terminal sends SIGINT. The first such signal only sets a flag; the
// trainer acts on it at the next step boundary, where every rank learns of it in the collective
// it already makes there, so all stop after the same step. A second signal ends the process at
// once with the conventional 128+signal status, unless it is the first one delivered again: under
// mpiexec in a SLURM job, scancel and the end of --time reach every rank both from slurmstepd and
// forwarded by MPICH's proxy, milliseconds apart (see StopSignals).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <initializer_list>

namespace shardgnn {

// The exit status of a run stopped by a signal with its state in a checkpoint: resumable
// (EX_TEMPFAIL of sysexits.h, "try again later").
constexpr int kExitStoppedResumable = 75;

// The stop signals: SIGTERM, SIGINT and SIGUSR1.
inline sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (const int sig : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&set, sig);
  return set;
}

// Takes SIGTERM, SIGINT and SIGUSR1 from now on (idempotent): they are blocked in every thread
// and one thread of ours waits for them with sigwaitinfo, so no thread is ever interrupted inside a
// library call (MPICH, for one, keeps a SIGUSR1 handler of its own). Call it first thing in main,
// before MPI or torch start threads: unless the signals were already blocked when the process
// started (the shardgnn dispatcher blocks them before it execs the program), it re-executes the
// program (`argv`) with them blocked, since libraries may have started threads as they loaded.
void take_stop_signals(char** argv);

// What a stop signal means, given who sent it (si_pid; 0 from the kernel, e.g. a terminal's
// Ctrl-C) and when: the first; the first again (from anyone within kEchoWindow of the first, or
// from another process within kDuplicateWindow); or a second, which ends the process. One
// instance per process, used by the signal thread; separate so that tests can drive it.
class StopSignals {
 public:
  enum class Action { first, duplicate, second };
  // Launchers repeat what they get: `timeout` signals its child and then its process group, so
  // mpiexec gets the signal twice and its proxy forwards both, milliseconds apart.
  static constexpr std::chrono::milliseconds kEchoWindow{250};
  static constexpr std::chrono::milliseconds kDuplicateWindow{2000};
  Action receive(pid_t sender, std::chrono::steady_clock::time_point when) noexcept;

 private:
  bool seen_ = false;
  pid_t first_sender_ = 0;
  std::chrono::steady_clock::time_point first_when_{};
};

// Call just before exiting with a stop's status, after MPI has finalised: comm::keep_exit_status_for_proxy
// (comm/launcher.hpp) with the first stop signal's sender.
void keep_exit_status_for_launcher() noexcept;

// The first stop signal received (0: none).
int stop_signal() noexcept;
// What a signal does, without one (for programs that embed the trainer, and tests): true when
// it is the first, which stop_signal() reports from then on. clear_stop forgets it.
bool request_stop(int sig) noexcept;
void clear_stop() noexcept;
// "SIGTERM", "SIGINT", "SIGUSR1", or "a signal".
const char* signal_name(int sig) noexcept;

}  // namespace shardgnn
