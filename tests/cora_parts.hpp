// Cora partitioned into one part per MPI rank (random: many remote neighbours; one part on one
// rank), or into a given number of parts that the ranks share, written once by rank 0 into a
// folder every rank sees, then loaded by every rank: the shared fixture of the MPI tests.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/hetero.hpp"
#include "datasets/npy.hpp"
#include "datasets/readers.hpp"
#include "datasets/writers.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "test_paths.hpp"

namespace shardgnn::test {

// A folder every rank sees, named `prefix` plus the pid of rank 0, which makes it and fills it
// with `write` while the others wait; returns its path on every rank.
inline std::string shared_folder(const comm::Communicator& world, const std::string& prefix, const std::function<void(const std::string&)>& write) {
  namespace fs = std::filesystem;
  std::string dir;
  if (world.rank() == 0) {
    dir = (fs::temp_directory_path() / (prefix + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    fs::create_directories(dir);
    write(dir);
  }
  std::int64_t len = static_cast<std::int64_t>(dir.size());
  world.broadcast(std::span<std::int64_t>(&len, 1), 0);
  dir.resize(static_cast<std::size_t>(len));
  world.broadcast(std::span<char>(dir.data(), dir.size()), 0);
  return dir;
}

// Hetero graph `h` with a second relation between papers, "mentions" (no reverse), that repeats
// some citations, so that rows list some papers twice, under two relations: read back through the
// IGB-Het layout (written under `scratch`), so it stores a relation id per edge. h's training
// nodes kept.
inline Dataset with_mentions(const Dataset& h, const std::string& scratch) {
  namespace fs = std::filesystem;
  write_igbh_layout(h, scratch + "/igbh");
  const int paper = h.schema.type_named("paper");
  const NodeId first = h.schema.begin(paper), papers = h.schema.types()[static_cast<std::size_t>(paper)].count;
  std::mt19937_64 rng(7);
  std::set<std::pair<NodeId, NodeId>> mentions;
  for (NodeId p = 0; p < papers; p += 3) {
    h.graph.visit([&](const auto& g) {
      for (const auto v : g.neighbors(first + p))  // some of its cited papers again
        if (v >= first && v < first + papers && rng() % 2 == 0) mentions.insert({p, static_cast<NodeId>(v) - first});
    });
    mentions.insert({p, static_cast<NodeId>(rng() % static_cast<std::uint64_t>(papers))});
  }
  std::vector<std::int64_t> pairs;
  for (const auto& [u, v] : mentions) pairs.push_back(u), pairs.push_back(v);
  fs::create_directories(scratch + "/igbh/processed/paper__mentions__paper");
  write_npy(scratch + "/igbh/processed/paper__mentions__paper/edge_index.npy", DType::kInt64, pairs.data(),
            std::vector<std::int64_t>{static_cast<std::int64_t>(mentions.size()), 2});
  Dataset kg = read_dataset(scratch + "/igbh", ReadOptions{});
  // The layout's types come in folder order, not h's: each training node moved to its type's range.
  std::vector<std::int64_t> train;
  for (const std::int64_t v : h.train_idx) {
    const int t = h.schema.type_of(v);
    train.push_back(kg.schema.begin(kg.schema.type_named(h.schema.types()[static_cast<std::size_t>(t)].name)) + (v - h.schema.begin(t)));
  }
  std::sort(train.begin(), train.end());
  kg.train_idx = IntArray(Array<std::int64_t>(std::move(train)));
  return kg;
}

// The hetero generator's graph `o` (with_mentions when `relation_ids`) saved in DIR/h and
// partitioned by METIS with one balance constraint per node type (and the training split) into a
// part per rank (or `parts`, which the ranks share) in DIR/parts, features stored as `dtype`: a
// folder every rank sees (shared_folder), returned.
inline std::string typed_parts_folder(const comm::Communicator& world, const std::string& prefix, const HeteroOptions& o,
                                      FeatureDtype dtype = FeatureDtype::kFloat32, int parts = 0, bool relation_ids = false) {
  return shared_folder(world, prefix, [&](const std::string& dir) {
    save_dataset(relation_ids ? with_mentions(generate_hetero(o), dir) : generate_hetero(o), dir + "/h");
    const Dataset d = load_dataset(dir + "/h");
    PartitionResult r;
    r.config.parts = parts > 0 ? parts : world.size();
    r.config.balance = {BalanceKey::kNtypes, BalanceKey::kTrain};
    r.assignment = make_partitioner(r.config.method)->partition(d, r.config);
    write_partitioned(d, dir + "/h", r, dir + "/parts", {.feature_dtype = dtype});
  });
}

struct CoraParts {
  comm::Communicator world = comm::Communicator::world();
  std::string root;
  Dataset ds;
  PartitionInfo info;
  Shard shard;
  std::vector<NodeId> old_of_new;  // global id -> Cora id

  // parts 0: one per rank; else that many, each rank loading its parts_of_rank merged. `edit`
  // changes the dataset before it is partitioned; the shards store features as `feature_dtype`.
  explicit CoraParts(int parts = 0, const std::function<void(Dataset&)>& edit = {}, FeatureDtype feature_dtype = FeatureDtype::kFloat32) {
    root = shared_folder(world, "shardgnn-mpi-", [&](const std::string& dir) {
      Dataset raw = read_dataset(sample("cora.npz"), {});
      if (edit) edit(raw);
      save_dataset(raw, dir + "/cora");
      Dataset d = load_dataset(dir + "/cora");
      PartitionResult r;
      r.config.parts = parts > 0 ? parts : world.size();
      r.config.method = PartitionMethod::kRandom;
      r.config.seed = 3;
      r.assignment = make_partitioner(r.config.method)->partition(d, r.config);
      write_partitioned(d, dir + "/cora", r, dir + "/parts", {.feature_dtype = feature_dtype});
    });
    ds = load_dataset(root + "/cora");
    info = load_partition_info(root + "/parts");
    shard = parts > 0 ? load_shard_for_rank(info, world.rank(), world.size()) : load_shard(info, world.rank());
    old_of_new.resize(static_cast<std::size_t>(ds.num_nodes()));
    for (PartId k = 0; k < info.book.parts(); ++k) {
      Shard s = load_shard(info, k);
      for (std::size_t i = 0; i < s.orig_ids.size(); ++i) old_of_new[info.book.begin(k) + static_cast<NodeId>(i)] = s.orig_ids[i];
    }
  }
  ~CoraParts() {
    world.barrier();
    if (world.rank() == 0) std::filesystem::remove_all(root);
  }
  CoraParts(const CoraParts&) = delete;
  CoraParts& operator=(const CoraParts&) = delete;
};

}  // namespace shardgnn::test
