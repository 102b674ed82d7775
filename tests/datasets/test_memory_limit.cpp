#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "datasets/memory_limit.hpp"
#include "test_paths.hpp"

using namespace shardgnn;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << "\n";
}

constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

}  // namespace

TEST_CASE("cgroup v2: the smallest memory.max from the process's cgroup up to the root", "[memory]") {
  test::ScratchDir dir;
  const fs::path root = dir.str();
  // A SLURM-like tree: the job limits, its step and task say "max".
  put(root / "memory.max", "max");
  put(root / "slurm/uid_1/job_7/memory.max", "4294967296");
  put(root / "slurm/uid_1/job_7/step_0/memory.max", "max");
  put(root / "slurm/uid_1/job_7/step_0/task_3/memory.max", "max");
  CHECK(cgroup_memory_limit("0::/slurm/uid_1/job_7/step_0/task_3\n", root.string()) == 4 * GiB);
  // A tighter limit below the job wins.
  put(root / "slurm/uid_1/job_7/step_0/memory.max", "1073741824");
  CHECK(cgroup_memory_limit("0::/slurm/uid_1/job_7/step_0/task_3\n", root.string()) == 1 * GiB);
  // A cgroup namespace shows "/": the root's own file is the limit.
  put(root / "memory.max", "2147483648");
  CHECK(cgroup_memory_limit("0::/\n", root.string()) == 2 * GiB);
}

TEST_CASE("cgroup v1 and hybrid layouts, no limit, garbage and missing files read as none", "[memory]") {
  test::ScratchDir dir;
  const fs::path root = dir.str();
  const std::string v1 = "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n0::/\n";
  // Nothing there at all.
  CHECK_FALSE(cgroup_memory_limit(v1, root.string()).has_value());
  // v1's "unlimited" is 2^63 - 1 rounded down to a page.
  put(root / "memory/memory.limit_in_bytes", "9223372036854771712");
  put(root / "memory/process_api/abc/memory.limit_in_bytes", "9223372036854771712");
  CHECK_FALSE(cgroup_memory_limit(v1, root.string()).has_value());
  put(root / "memory/process_api/memory.limit_in_bytes", "3221225472");
  CHECK(cgroup_memory_limit(v1, root.string()) == 3 * GiB);
  // Controllers listed together, as "memory,cpu" would be.
  CHECK(cgroup_memory_limit("4:cpu,memory:/process_api/abc\n", root.string()) == 3 * GiB);
  // Hybrid: v2 mounted at <root>/unified, tighter than v1.
  put(root / "unified/memory.max", "536870912");
  CHECK(cgroup_memory_limit(v1, root.string()) == GiB / 2);
  // Garbage is ignored, not trusted.
  put(root / "unified/memory.max", "lots");
  put(root / "memory/process_api/memory.limit_in_bytes", "");
  CHECK_FALSE(cgroup_memory_limit(v1, root.string()).has_value());
  CHECK_FALSE(cgroup_memory_limit("not a cgroup line\n", root.string()).has_value());
  put(root / "memory/process_api/memory.limit_in_bytes", "123abc");
  CHECK_FALSE(cgroup_memory_limit(v1, root.string()).has_value());
  put(root / "memory/process_api/memory.limit_in_bytes", "1073741824 ");  // trailing blanks are fine
  CHECK(cgroup_memory_limit(v1, root.string()) == GiB);
  // A process outside its cgroup namespace sees a path above the root: nothing there is its own.
  put(root / "memory/memory.limit_in_bytes", "1073741824");
  CHECK_FALSE(cgroup_memory_limit("4:memory:/../../other\n", root.string()).has_value());
  CHECK(cgroup_memory_limit("4:memory:/\n", root.string()) == GiB);
}

TEST_CASE("usable memory is at most the machine's and never zero here", "[memory]") {
  const std::uint64_t usable = usable_memory_bytes();
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  CHECK(usable > 0);
  CHECK(usable <= static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page));
}
