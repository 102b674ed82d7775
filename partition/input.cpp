#include "partition/input.hpp"

#include <filesystem>

#include "datasets/error.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

void load_input(const comm::Communicator& world, const std::string& dir, const std::string& scratch, const std::string& verb, Input& in) {
  comm::agree(world, [&] {
    if (fs::exists(fs::path(dir) / "partition.json")) {
      auto info = std::make_shared<const PartitionInfo>(load_partition_info(dir));
      in.shard = load_shard_for_rank(*info, world.rank(), world.size(), scratch);
      in.meta = info->dataset;
      in.name = info->dataset.name;
      in.kind = "partitioned";
      if (const int parts = info->book.parts(), P = world.size(); parts > P)
        in.kind += ", its " + std::to_string(parts) + " parts merged " + (parts % P == 0 ? "" : "up to ") + std::to_string((parts + P - 1) / P) + " per rank";
    } else if (fs::exists(fs::path(dir) / "meta.json")) {
      if (world.size() != 1)
        throw InputError(dir + ": a dataset folder " + verb + " in one process; for " + std::to_string(world.size()) + " ranks partition it first (shardgnn partition " +
                         dir + " --parts " + std::to_string(world.size()) + " --out DIR)");
      in.dataset = load_dataset(dir);
      in.shard = shard_from_dataset(in.dataset);
      in.meta = meta_of(in.dataset);
      in.name = in.dataset.name;
      in.kind = "dataset";
    } else {
      throw InputError(dir + ": neither a partitioned dataset (partition.json) nor a dataset folder (meta.json)");
    }
  });
}

}  // namespace shardgnn
