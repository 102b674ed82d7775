#include "datasets/memory_limit.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace shardgnn {

namespace {

// The first line of `path` as a limit: nullopt for a missing file, "max" or anything not a number.
std::optional<std::uint64_t> read_limit(const fs::path& path, std::uint64_t unlimited_from) {
  std::ifstream in(path);
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.pop_back();
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data() || ptr != end || value >= unlimited_from) return std::nullopt;
  return value;
}

// The smallest limit in `file` over `base`/`path` and each folder above it up to `base`.
std::optional<std::uint64_t> min_up_the_tree(const fs::path& base, const std::string& path, const char* file, std::uint64_t unlimited_from) {
  std::optional<std::uint64_t> best;
  fs::path rel = fs::path(path).relative_path().lexically_normal();
  // A process outside its cgroup namespace sees a path above the namespace's root ("/../.."):
  // nothing under `base` belongs to it.
  if (!rel.empty() && *rel.begin() == "..") return std::nullopt;
  while (true) {
    if (auto v = read_limit(base / rel / file, unlimited_from)) best = std::min(best.value_or(*v), *v);
    if (rel.empty() || rel == ".") break;
    rel = rel.parent_path();
  }
  return best;
}

}  // namespace

std::optional<std::uint64_t> cgroup_memory_limit(const std::string& proc_cgroup_text, const std::string& cgroup_root) {
  const fs::path root(cgroup_root);
  std::optional<std::uint64_t> best;
  auto take = [&](std::optional<std::uint64_t> v) {
    if (v) best = std::min(best.value_or(*v), *v);
  };
  std::istringstream lines(proc_cgroup_text);
  for (std::string line; std::getline(lines, line);) {
    // "<hierarchy id>:<controllers>:<path>"; the path may itself hold ':'.
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (id == "0" && controllers.empty()) {
      // cgroup v2: memory.max ("max" is no limit).
      constexpr std::uint64_t kNone = ~std::uint64_t{0};
      take(min_up_the_tree(root, path, "memory.max", kNone));
      take(min_up_the_tree(root / "unified", path, "memory.max", kNone));
    } else {
      std::istringstream names(controllers);
      for (std::string name; std::getline(names, name, ',');)
        if (name == "memory")  // cgroup v1: "no limit" reads as a page-rounded 2^63 - 1
          take(min_up_the_tree(root / "memory", path, "memory.limit_in_bytes", std::uint64_t{1} << 62));
    }
  }
  return best;
}

std::uint64_t usable_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  std::uint64_t physical = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  if (auto limit = cgroup_memory_limit(text.str(), "/sys/fs/cgroup")) physical = physical > 0 ? std::min(physical, *limit) : *limit;
  return physical;
}

}  // namespace shardgnn
