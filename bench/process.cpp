#include "bench/process.hpp"

#include <sys/resource.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {
using Clock = std::chrono::steady_clock;

// RssAnon of `pid` in kB (0 when it is gone), and its children's pids.
std::int64_t rss_anon_kb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("RssAnon:", 0) == 0) return std::atoll(line.c_str() + 8);
  return 0;
}

std::vector<pid_t> children(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (pid_t c; in >> c;) out.push_back(c);
  }
  return out;
}

// The largest RssAnon of any process in the tree under `root`.
std::int64_t tree_peak_anon_kb(pid_t root) {
  std::int64_t peak = 0;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    peak = std::max(peak, rss_anon_kb(p));
    for (pid_t c : children(p)) todo.push_back(c);
  }
  return peak;
}
}  // namespace

// Runs argv[0] with argv, capturing stdout, and measures wall time and peak RSS (wait4).
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd) {
  int fds[2], errs[2];
  // Close-on-exec: a child started meanwhile from another thread must not inherit these pipes'
  // write ends, or the reads below would wait for that child too.
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  if (pipe2(errs, O_CLOEXEC) != 0) {
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error("pipe failed");
  }
  // Built before fork: the child of a multithreaded process should not allocate.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(errs[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    close(errs[0]);
    close(errs[1]);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execvp(args[0], args.data());
    // The failure report's last line says which program could not start (write: nothing that allocates after fork).
    const char what[] = "cannot start ";
    [[maybe_unused]] ssize_t w = write(STDERR_FILENO, what, sizeof what - 1);
    w = write(STDERR_FILENO, args[0], std::strlen(args[0]));
    w = write(STDERR_FILENO, "\n", 1);
    _exit(127);
  }
  close(fds[1]);
  close(errs[1]);
  ProcessResult r;
  // Its stderr goes on to ours as it comes, and its tail is kept: the failing program's own
  // error line, for the one line a benchmark prints when a run fails.
  std::thread err_reader([&] {
    constexpr std::size_t kKeep = 8192;
    char ebuf[4096];
    for (ssize_t got; (got = read(errs[0], ebuf, sizeof ebuf)) > 0;) {
      for (ssize_t off = 0; off < got;) {
        const ssize_t w = write(STDERR_FILENO, ebuf + off, static_cast<std::size_t>(got - off));
        if (w <= 0) break;
        off += w;
      }
      r.err_tail.append(ebuf, static_cast<std::size_t>(got));
      if (r.err_tail.size() > 2 * kKeep) r.err_tail.erase(0, r.err_tail.size() - kKeep);
    }
    close(errs[0]);
  });
  std::atomic<bool> done{false};
  std::atomic<std::int64_t> peak_anon_kb{0};
  std::thread sampler([&] {
    while (!done.load()) {
      peak_anon_kb = std::max<std::int64_t>(peak_anon_kb.load(), tree_peak_anon_kb(pid));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  char buf[4096];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<std::size_t>(got));
  close(fds[0]);
  rusage ru{};
  int status = 0;
  wait4(pid, &status, 0, &ru);
  done = true;
  sampler.join();
  err_reader.join();
  r.peak_anon_mb = static_cast<double>(peak_anon_kb.load()) / 1024.0;
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.peak_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string last_line(const std::string& text) {
  std::size_t end = text.size();
  while (end > 0) {
    const std::size_t begin = text.rfind('\n', end - 1);
    const std::size_t from = begin == std::string::npos ? 0 : begin + 1;
    std::string line = text.substr(from, end - from);
    if (line.find_first_not_of(" \t\r") != std::string::npos) return line;
    if (begin == std::string::npos) break;
    end = begin;
  }
  return "";
}

std::string failure_line(const ProcessResult& r) {
  const std::string status = "exit " + std::to_string(r.status);
  const std::string line = last_line(r.err_tail);
  return line.empty() ? status : status + ": " + line;
}

int report_failures(const std::string& command, const std::vector<RunOutcome>& runs) {
  int failed = 0;
  for (const RunOutcome& r : runs)
    if (!r.error.empty()) {
      std::fprintf(stderr, "%s: %s failed: %s\n", command.c_str(), r.who.c_str(), r.error.c_str());
      ++failed;
    }
  return failed > 0 ? 1 : 0;
}

}  // namespace shardgnn::cli
