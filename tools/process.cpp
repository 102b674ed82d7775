#include "tools/process.hpp"

#include <sys/resource.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

// Runs argv[0] with argv, capturing stdout, and measures wall time and peak RSS (wait4).
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd) {
  int fds[2];
  // Close-on-exec: a child started meanwhile from another thread must not inherit this pipe's
  // write end, or the read below would wait for that child too.
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  // Built before fork: the child of a multithreaded process should not allocate.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  ProcessResult r;
  char buf[4096];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<std::size_t>(got));
  close(fds[0]);
  rusage ru{};
  int status = 0;
  wait4(pid, &status, 0, &ru);
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.peak_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }

}  // namespace shardgnn::cli
