// The benchmark lab's shared pieces: the `shardgnn bench` subcommands (one program,
// shardgnn-bench, that the dispatcher execs), the machine line every benchmark prints first, the
// generated graph of the training benchmarks, and where the `shardgnn` command is.
#pragma once

#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "datasets/generators.hpp"
#include "tools/cli.hpp"

namespace shardgnn::cli {

int bench_data_main(const std::vector<std::string>& args);
int bench_partition_main(const std::vector<std::string>& args);
int bench_partition_one_main(const std::vector<std::string>& args);
int bench_train_main(const std::vector<std::string>& args);
int bench_hetero_main(const std::vector<std::string>& args);
int bench_balance_main(const std::vector<std::string>& args);
int bench_strategies_main(const std::vector<std::string>& args);
int bench_scale_main(const std::vector<std::string>& args);

// Where a benchmark ran, for its first line: the CPU model, cores, the vector units that decide
// compute kernels, and OPENBLAS_CORETYPE when the environment forces OpenBLAS's kernels.
std::string machine_description();

// The `shardgnn` command the benchmarks run (train, partition, bench partition-one): the one that
// exec'd this program (SHARDGNN_EXE, which the dispatcher sets), so both come from one build.
std::string shardgnn_exe();

// Fanouts as the peers (DGL, DistDGL) list them, from the input layer inwards: ours reversed.
inline std::string input_first_fanouts(const std::vector<int>& fanouts) { return fanouts_text({fanouts.rbegin(), fanouts.rend()}); }

// The training benchmarks' generated graph: the block-model options --nodes, --avg-degree,
// --feature-dim and --classes, and the dataset folder work/tag, generated on first use (and
// reused), loaded. trim_test keeps only as many test nodes as validation nodes (when evaluation
// is not measured).
SbmOptions sbm_options(const po::variables_map& vm);
struct SbmGraph {
  std::string tag, dir;
  Dataset ds;
};
SbmGraph sbm_graph(const std::string& work, const std::string& tag, const SbmOptions& sbm, bool trim_test);

}  // namespace shardgnn::cli
