// Where the tests find their data, and a scratch folder per test.
#pragma once

#include <filesystem>
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

}  // namespace shardgnn::test
