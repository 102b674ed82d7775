// Shared plumbing of the subcommands: option parsing with one-line usage errors, help output.
#pragma once

#include <malloc.h>

#include <boost/program_options.hpp>
#include <string>

#include "comm/communicator.hpp"
#include "datasets/generators.hpp"
#include "partition/config.hpp"
#include <vector>

namespace shardgnn::cli {

// The allocator policy of a process that runs batch after batch (training, the sampler
// benchmark). Every batch allocates buffers of tens of MB, which glibc serves with fresh mmaps
// and unmaps at free, so each batch paid page faults, zeroing and munmap for memory it had just
// released (a fifth of a training epoch in a profile, 15% of the sampler benchmark's cycles in
// clear_page). Keep freed memory in the heap for reuse instead, and never trim it: with a trim
// threshold (1 GiB was tried), a batch whose temporaries free more than that at the top of the
// heap hands it back, and the next batch faults it all in again. Not for the partitioner, whose
// big arrays are allocated once.
inline void keep_freed_memory_for_batches() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

namespace po = boost::program_options;

// Thrown for a malformed command line; main prints it with a hint to --help and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses `args` against `opts` and `positional` names (each taking one value, in order).
// Returns false (after printing help) when --help was given.
bool parse(const std::vector<std::string>& args, const std::string& usage, po::options_description& opts,
           const std::vector<std::string>& positional, po::variables_map& vm);

// The command name for messages, e.g. "shardgnn data convert".
extern std::string g_command;

int data_main(const std::vector<std::string>& args);
int bench_main(const std::vector<std::string>& args);
int bench_data_main(const std::vector<std::string>& args);
int partition_main(const std::vector<std::string>& args);
int report_main(const std::vector<std::string>& args);
int bench_partition_main(const std::vector<std::string>& args);
int bench_partition_one_main(const std::vector<std::string>& args);
int bench_train_main(const std::vector<std::string>& args);
int bench_balance_main(const std::vector<std::string>& args);

// The training benchmarks' generated graph: the block-model options --nodes, --avg-degree,
// --feature-dim and --classes, and the dataset folder `dir` generated on first use (and reused).
// trim_test keeps only as many test nodes as validation nodes (when evaluation is not measured).
SbmOptions sbm_options(const po::variables_map& vm);
void ensure_sbm_dataset(const std::string& dir, const SbmOptions& sbm, bool trim_test);
int bench_sampler_main(const std::vector<std::string>& args, const comm::Communicator& world);
int train_main(const std::vector<std::string>& args, const comm::Communicator& world);  // in the training module

// The partitioning options shared by `partition` and `bench partition`.
void add_partition_options(po::options_description& o);
PartitionConfig partition_config(const po::variables_map& vm);

}  // namespace shardgnn::cli
