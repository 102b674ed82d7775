// Loading one of shardgnn's own modules (libshardgnn_dist.so, libshardgnn_train.so) with dlopen:
// next to the running binary (the build tree), else in ../lib/shardgnn/ (an installed tree).
#pragma once

#include <dlfcn.h>

#include <filesystem>
#include <string>

namespace shardgnn::cli {

// The module's handle, or nullptr with `tried` listing each place tried and why it failed.
inline void* load_module(const std::string& file, std::string& tried) {
  namespace fs = std::filesystem;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe").parent_path();
  for (const fs::path& candidate : {exe_dir / file, exe_dir / "../lib/shardgnn" / file}) {
    if (void* module = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) return module;
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  return nullptr;
}

}  // namespace shardgnn::cli
