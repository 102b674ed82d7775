#include "comm/launcher.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace shardgnn::comm {

void keep_exit_status_for_proxy(pid_t sender) noexcept {
  if (sender <= 0 || ::getppid() != sender) return;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/comm", static_cast<int>(sender));
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return;
  char comm[32] = {};
  const bool proxy = std::fgets(comm, sizeof comm, f) != nullptr && std::strncmp(comm, "hydra_pmi_proxy", 15) == 0;
  std::fclose(f);
  if (!proxy) return;
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t self = ::getpid();
  rlimit files{};
  const int max_fd = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 65536 ? static_cast<int>(files.rlim_cur) : 65536;
  if (::fork() != 0) return;  // this process goes on to exit (also when fork failed)
  // The child: only async-signal-safe calls from here on. It keeps only stdout and stderr: this
  // process holds copies of those pipes at other numbers (inherited from the proxy and the
  // runtime), and while any copy is open, closing stderr below would not wake the proxy.
  ::close(STDIN_FILENO);
  if (::close_range(3, ~0U, 0) != 0)
    for (int fd = 3; fd < max_fd; ++fd) ::close(fd);
  // Each wait polls a state rather than
  // sleeping a fixed time, so a loaded machine that starves the proxy cannot lose the status;
  // each is capped (30 s) so that the child never outlives a launcher that went away.
  for (int i = 0; i < 30000 && ::getppid() == self; ++i) ::usleep(1000);  // until this process has exited
  ::close(STDERR_FILENO);  // wakes the proxy, which reaps one exited child while stdout is open
  // Until the proxy has reaped it (a zombie still answers kill 0). Only then is stdout closed:
  // that wakes the proxy again, for the next rank, when one wake-up saw several ranks' stderr close.
  for (int i = 0; i < 30000 && (::kill(self, 0) == 0 || errno != ESRCH); ++i) ::usleep(1000);
  ::_exit(0);
}

}  // namespace shardgnn::comm
