// Where the tests find their data, and a scratch folder per test.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace shardgnn::test {

inline std::string sample(const std::string& name) { return std::string(SHARDGNN_SAMPLES_DIR) + "/" + name; }
inline std::string fixture(const std::string& name) { return std::string(SHARDGNN_FIXTURES_DIR) + "/" + name; }
// A file of ../shared/datasets, or "" when that folder is absent (a fresh clone elsewhere).
inline std::string shared_dataset(const std::string& rel) {
  std::string p = std::string(SHARDGNN_SHARED_DATASETS) + "/" + rel;
  return std::filesystem::exists(p) ? p : std::string();
}

// A fresh, empty folder under the system temp dir, removed when the object goes out of scope.
class ScratchDir {
 public:
  ScratchDir() {
    auto base = std::filesystem::temp_directory_path();
    for (int i = 0;; ++i) {
      path_ = base / ("shardgnn-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++) + "-" + std::to_string(i));
      if (std::filesystem::create_directory(path_)) break;
    }
  }
  ~ScratchDir() { std::error_code ec; std::filesystem::remove_all(path_, ec); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  static int& counter() { static int c = 0; return c; }
  std::filesystem::path path_;
};

// The file whose pages are mapped at `addr` in this process (/proc/self/maps), or "" for memory
// that no file backs: how a test tells a mapped view from a copy.
inline std::string mapped_file_at(const void* addr) {
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode >> path;
    const auto dash = range.find('-');
    const auto lo = std::stoull(range.substr(0, dash), nullptr, 16), hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (a >= lo && a < hi) return inode == "0" ? std::string() : path;
  }
  return "";
}

}  // namespace shardgnn::test
