// Input features of a typed graph's batch: each node type's rows at its own width, fetched as
// the FeatureStore fetches one matrix (own rows read here, the others from a cache or their owners
// in one exchange per type), each type's rows numbered in its own id space: part k's run of type
// t follows the runs of type t of the parts before it. So each featured type is a FeatureStore
// over a shard of its own (its book, its rows, its halo), and the store's paths, cache and wire
// types serve every type unchanged.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "partition/node_types.hpp"
#include "partition/shards.hpp"
#include "sampler/config.hpp"
#include "sampler/feature_store.hpp"
#include "sampler/minibatch.hpp"
#include "sampler/shard_view.hpp"

namespace shardgnn {

class TypedFeatureStore {
 public:
  // Collective on `comm`: a store per featured type of `own`'s graph (a typed shard: Shard::schema),
  // each with its cache built per `config` (the degree policy counts each type's halo rows by
  // their degree; presampling is not available per type and builds none) and, with
  // config.node_local, the rows of the other ranks on this node read from their shards' files.
  // `own` and `comm` must outlive the store.
  TypedFeatureStore(const Shard& own, const comm::Communicator& comm, const SamplerConfig& config);
  ~TypedFeatureStore();

  // Collective: every rank calls it once per step. For each type t: at[t] holds the positions in
  // `nodes` (global ids) of its nodes of type t, in their order; with features rows[t] holds their
  // rows [n_t x F_t] (ids[t] empty), without them ids[t] holds their type ids (the rows of the
  // type's embedding table, numbered as type_book(t) says; rows[t] empty).
  void fetch(std::span<const NodeId> nodes, std::vector<FeatureRows>& rows, std::vector<std::vector<std::int64_t>>& at,
             std::vector<std::vector<NodeId>>& ids);
  // The typed batch of `mb`'s input nodes: its type_features, type_at, type_ids and node_types.
  void fetch(MiniBatch& mb);

  const NodeTypeIndex& types() const noexcept { return types_; }
  // Type t's id for global id v (v of type t, in part k of the partition): its place in type t's
  // own numbering.
  NodeId type_id(int t, PartId k, NodeId v) const noexcept;
  // Type t's rows by rank: rank r's (its parts' runs of the type) are [begin(r), end(r)) of the
  // type's own numbering.
  const PartitionBook& type_book(int t) const;
  // The dataset ids (Shard::orig_ids) of this rank's nodes of type t, in the type's numbering: what
  // keys its embedding rows in a checkpoint, whatever the partition and rank count.
  std::vector<NodeId> owned_dataset_ids(int t) const;
  // Type t's store (null for a type without features), for its counters.
  // Every type's store's counters, summed.
  FeatureCounters counters() const;
  const FeatureStore* store(int t) const noexcept { return per_type_[static_cast<std::size_t>(t)].store.get(); }

 private:
  struct PerType {
    Shard shard;  // the type's rows, book and halo; its arrays views of the own shard's
    std::unique_ptr<ShardView> view;
    std::unique_ptr<comm::Communicator> comm;
    std::unique_ptr<FeatureStore> store;
    std::vector<NodeId> first;  // per part of the partition, the type id of its run's first node, then the type's count
    PartitionBook book;         // per rank
    std::vector<NodeId> ids;    // a fetch's type ids, kept between fetches
  };
  const Shard& own_;
  NodeTypeIndex types_;
  std::vector<PerType> per_type_;
};

}  // namespace shardgnn
