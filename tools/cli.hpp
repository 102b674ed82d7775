// Shared plumbing of the subcommands: option parsing with one-line usage errors, help output.
#pragma once

#include <boost/program_options.hpp>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "datasets/dataset.hpp"
#include "datasets/error.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/names.hpp"
#include "datasets/generators.hpp"
#include "comm/communicator.hpp"
#include "partition/config.hpp"
#include <vector>

namespace shardgnn::cli {

// The allocator policy of our batch loops: freed memory stays in the heap for reuse
// instead of going back to the kernel, to be faulted in and zeroed again on the next allocation.
// - Training and the sampler benchmark: every batch allocates buffers of tens of MB, which glibc
//   serves with fresh mmaps and unmaps at free (a large share of a training epoch). The
//   heap is never trimmed either: with a trim threshold (1 GiB was tried), a step whose
//   temporaries free more than that at the top of the heap hands it back, and the next step
//   faults it all in again.
// Not used by `shardgnn partition`: there it made METIS faster (less page zeroing by the kernel)
// but raised the peak memory, and memory is what limits partitioning a big graph.
inline void keep_freed_memory_in_heap() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

// "15,10,5"
inline std::string fanouts_text(const std::vector<int>& fanouts) {
  std::string out;
  for (int f : fanouts) {
    if (!out.empty()) out += ',';
    out += std::to_string(f);
  }
  return out;
}

namespace po = boost::program_options;

// An on/off option's value; anything else is an InputError naming the option.
inline bool parse_on_off(const std::string& value, const std::string& option) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw InputError(option + " must be on or off, got '" + value + "'");
}

// An option bound to `target`, its default (shown in --help) the value `target` holds: the
// config struct's own default.
template <class T>
po::typed_value<T>* bound(T& target) {
  std::ostringstream text;
  text << target;
  return po::value<T>(&target)->default_value(target, text.str());
}

// An option whose text `parse` turns into `target` when the options are parsed; its default is
// `name` of the value `target` holds. For enums (with their name tables) and lists.
template <class T, class Parse, class Name>
po::typed_value<std::string>* bound(T& target, Parse parse, Name name) {
  return po::value<std::string>()->default_value(name(target))->notifier([&target, parse](const std::string& text) { target = parse(text); });
}

// The same for a value named in an enum's name table (`what` names the option in errors).
template <class E, std::size_t N>
po::typed_value<std::string>* bound(E& target, const EnumName<E> (&table)[N], const char* what) {
  return bound(target, [&table, what](const std::string& text) { return parse_enum(table, text, what); }, [&table](E v) { return enum_name(table, v); });
}

// Thrown for a malformed command line; main prints it with a hint to --help and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// --collective-timeout SECONDS for the commands that run as MPI jobs (train, partition, bench
// sampler): how long a wait for the other ranks may take before the rank ends the job
// (comm::set_collective_timeout, exit status comm::kExitLostPeer).
inline void add_collective_timeout_option(po::options_description& o) {
  o.add_options()("collective-timeout", po::value<std::string>()->default_value("600")->notifier([](const std::string& v) {
    try {
      comm::set_collective_timeout(comm::parse_collective_timeout(v));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }),
                  "seconds a wait for the other ranks may take before this rank ends the job with status 76, naming the call and where the run "
                  "stood (a lost node or link; 0 = wait forever); the long phases get 6x: start-up, checkpoints, the final evaluation, partitioning");
}

// Runs a command's body; a failure is one line on stderr naming the command (g_command), and the
// exit status 2 for a malformed command line, 1 for anything else.
int report_errors(const std::function<int()>& body);

// Parses `args` against `opts` and `positional` names (each taking one value, in order).
// Returns false (after printing help) when --help was given.
bool parse(const std::vector<std::string>& args, const std::string& usage, po::options_description& opts,
           const std::vector<std::string>& positional, po::variables_map& vm);

// The command name for messages, e.g. "shardgnn data convert".
extern std::string g_command;

int data_main(const std::vector<std::string>& args);
// How many ranks an MPI launcher started this process among (mpiexec: PMI_SIZE; srun:
// SLURM_STEP_NUM_TASKS; Open MPI's), or 1.
inline int launcher_ranks() {
  for (const char* name : {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (const char* v = std::getenv(name); v != nullptr && std::atoi(v) > 1) return std::atoi(v);
  return 1;
}

// "a,b,c" -> {"a", "b", "c"}; an empty list or item is a UsageError naming `option`.
std::vector<std::string> split_list(const std::string& text, const std::string& option);
// The same for a list of integers of at least `least` each.
std::vector<int> split_int_list(const std::string& text, const std::string& option, int least);

// --feature-dtype's value: float32, float16 or bfloat16; a UsageError else.
FeatureDtype parse_feature_dtype_option(const std::string& text);

// "4G", "512M", "100k" (powers of 1024) or a plain byte count; a UsageError naming `option` else.
std::uint64_t parse_byte_size(const std::string& text, const std::string& option);

// `partition` over the ranks of `comm` (every rank runs it; one process: one_rank()).
int partition_main(const std::vector<std::string>& args, const comm::Communicator& comm);
int report_main(const std::vector<std::string>& args);
// The partitioning options shared by `partition` and `bench partition`.
// Bound into `c`; check_partition_config then checks what the options cannot alone (UsageError).
void add_partition_options(po::options_description& o, PartitionConfig& c);
void check_partition_config(const PartitionConfig& c);

}  // namespace shardgnn::cli
