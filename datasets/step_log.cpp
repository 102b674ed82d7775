#include "datasets/step_log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include <boost/json.hpp>

namespace shardgnn::steps {

namespace {

// Short against the steps it measures (seconds to minutes), long against reading /proc.
constexpr auto kSamplePeriod = std::chrono::milliseconds(20);

std::int64_t anon_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("RssAnon:", 0) == 0) return std::atoll(line.c_str() + 8);
  return 0;
}

struct Io {
  std::int64_t rchar = 0, wchar = 0, read_bytes = 0, write_bytes = 0;
};

Io io_now() {
  Io io;
  std::ifstream f("/proc/self/io");
  std::string key;
  std::int64_t value = 0;
  while (f >> key >> value) {
    if (key == "rchar:") io.rchar = value;
    else if (key == "wchar:") io.wchar = value;
    else if (key == "read_bytes:") io.read_bytes = value;
    else if (key == "write_bytes:") io.write_bytes = value;
  }
  return io;
}

class Log {
 public:
  static Log& get() {
    static Log log;  // lives to the process's end: its thread is detached and reads only atomics
    return log;
  }
  bool enabled() const { return !path_.empty(); }

  void begin(const std::string& name) {
    if (!enabled()) return;
    std::lock_guard lock(mu_);
    finish();
    name_ = name;
    start_ = std::chrono::steady_clock::now();
    io_ = io_now();
    anon_start_ = anon_kb();
    peak_.store(anon_start_);
    open_ = true;
  }
  void end() {
    if (!enabled()) return;
    std::lock_guard lock(mu_);
    finish();
  }

 private:
  Log() {
    const char* p = std::getenv("SHARDGNN_STEP_LOG");
    if (p == nullptr || *p == '\0') return;
    path_ = p;
    if (const char* r = std::getenv("PMI_RANK"); r != nullptr && *r != '\0') path_ += std::string(".rank") + r;
    std::thread([this] {
      for (;;) {
        const std::int64_t now = anon_kb();
        std::int64_t seen = peak_.load();
        while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(kSamplePeriod);
      }
    }).detach();
  }

  // Appends the step in progress as a JSON line (under mu_).
  void finish() {
    if (!open_) return;
    open_ = false;
    const Io io = io_now();
    const std::int64_t anon_end = anon_kb();
    const std::int64_t peak = std::max({peak_.load(), anon_start_, anon_end});
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const boost::json::object line{{"step", name_},
                                   {"wall_s", wall},
                                   {"read_bytes", io.read_bytes - io_.read_bytes},
                                   {"write_bytes", io.write_bytes - io_.write_bytes},
                                   {"rchar", io.rchar - io_.rchar},
                                   {"wchar", io.wchar - io_.wchar},
                                   {"anon_start_mib", static_cast<double>(anon_start_) / 1024},
                                   {"anon_end_mib", static_cast<double>(anon_end) / 1024},
                                   {"anon_peak_mib", static_cast<double>(peak) / 1024}};
    // A log that cannot be written loses the measurement, never the work being measured.
    if (std::FILE* f = std::fopen(path_.c_str(), "a")) {
      const std::string text = boost::json::serialize(line) + "\n";
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
  }

  std::string path_;
  std::mutex mu_;
  bool open_ = false;
  std::string name_;
  std::chrono::steady_clock::time_point start_;
  Io io_;
  std::int64_t anon_start_ = 0;
  std::atomic<std::int64_t> peak_{0};
};

}  // namespace

void begin(const std::string& name) { Log::get().begin(name); }
void end() { Log::get().end(); }

}  // namespace shardgnn::steps
