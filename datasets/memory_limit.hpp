// How much memory this process may use: the machine's physical memory, lowered by any cgroup
// memory limit on the process (SLURM jobs and containers run under one). Used to size what may be
// mapped in ahead of use without evicting what training needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace shardgnn {

// min(physical memory, cgroup limit); physical memory when there is no limit or it cannot be read.
std::uint64_t usable_memory_bytes();

// The smallest memory limit on the cgroups of a process, from its /proc/<pid>/cgroup text and the
// cgroup file system's root (normally /sys/fs/cgroup). cgroup v2 ("0::<path>") reads memory.max in
// <root>/<path>, or <root>/unified/<path> on a hybrid layout; v1 (a line naming the memory
// controller) reads memory.limit_in_bytes in <root>/memory/<path>. Every folder from the process's
// cgroup up to the root counts, since a limit set on a parent (a SLURM job) binds its children (its
// steps and tasks). A missing or unreadable file, "max", or a v1 value of 2^62 or more is no limit.
// nullopt when nothing limits.
std::optional<std::uint64_t> cgroup_memory_limit(const std::string& proc_cgroup_text, const std::string& cgroup_root);

}  // namespace shardgnn
