#include "sampler/typed_features.hpp"

namespace shardgnn {

TypedFeatureStore::TypedFeatureStore(const Shard& own, const comm::Communicator& comm, const SamplerConfig& config)
    : own_(own), types_(NodeTypeIndex::of(own)) {
  if (!types_.typed()) throw std::logic_error("TypedFeatureStore: the shard's graph has one node type");
  const PartitionBook& book = types_.book();  // the partition's parts; a rank serves one or more (merged_parts)
  const int ranks = own.book.parts();
  const auto [mine, mine_end] = parts_of_rank(book.parts(), own.part, ranks);
  per_type_.resize(static_cast<std::size_t>(types_.num_types()));
  for (int t = 0; t < types_.num_types(); ++t) {
    PerType& p = per_type_[static_cast<std::size_t>(t)];
    p.first.push_back(0);
    for (PartId k = 0; k < book.parts(); ++k) p.first.push_back(p.first.back() + types_.run_size(k, t));
    // Rank r's rows of the type: its parts' runs, contiguous in the type's numbering.
    std::vector<NodeId> offsets;
    for (int r = 0; r <= ranks; ++r) offsets.push_back(p.first[static_cast<std::size_t>(r == ranks ? book.parts() : parts_of_rank(book.parts(), r, ranks).first)]);
    p.book = PartitionBook(std::move(offsets));
    const std::int64_t F = own.schema.types()[static_cast<std::size_t>(t)].feature_dim;
    if (F == 0) continue;
    Shard& s = p.shard;
    s.part = own.part;
    s.book = p.book;
    s.merged_parts = own.merged_parts;
    s.feature_dim = F;
    s.feature_dtype = own.feature_dtype;
    if (own.feature_dtype == FeatureDtype::kFloat32)
      s.features = Array<float>(nullptr, own.type_features[static_cast<std::size_t>(t)].data(), own.type_features[static_cast<std::size_t>(t)].size());
    else
      s.features16 = Array<std::uint16_t>(nullptr, own.type_features16[static_cast<std::size_t>(t)].data(), own.type_features16[static_cast<std::size_t>(t)].size());
    // Degrees for the cache's ranking: the run's rows of the own graph's offsets (a row's degree
    // is a difference of two of them; no neighbour is read). A merged shard's runs are apart, so
    // their degrees are laid end to end in offsets of their own.
    const auto indptr = own.graph.indptr().span();
    if (mine_end - mine == 1) {
      const NodeId run = types_.run_begin(mine, t) - own.book.begin(own.part), n = types_.run_size(mine, t);
      s.graph = CsrGraph(Array<EdgeId>(nullptr, indptr.data() + run, static_cast<std::size_t>(n) + 1), Array<NodeId>());
    } else {
      std::vector<EdgeId> ends = {0};
      for (PartId k = mine; k < mine_end; ++k)
        for (NodeId i = types_.run_begin(k, t) - own.book.begin(own.part), n = i + types_.run_size(k, t); i < n; ++i)
          ends.push_back(ends.back() + indptr[static_cast<std::size_t>(i) + 1] - indptr[static_cast<std::size_t>(i)]);
      s.graph = CsrGraph(Array<EdgeId>(std::move(ends)), Array<NodeId>());
    }
    std::vector<NodeId> halo;
    std::vector<PartId> owner;
    for (std::size_t i = 0; i < own.halo_nodes.size(); ++i)
      if (const NodeId v = own.halo_nodes[i]; types_(v) == t) {
        halo.push_back(type_id(t, types_.locate(v).first, v));
        owner.push_back(own.halo_owner[i]);
      }
    s.halo_nodes = IntArray(Array<NodeId>(std::move(halo)));
    s.halo_owner = Array<PartId>(std::move(owner));
    p.comm = std::make_unique<comm::Communicator>(comm.dup());
    // Node-local reads as the FeatureStore makes them: the other ranks' type rows on this node,
    // mapped from their shards (the partition.json the own shard came with lists them; ShardView
    // reads them only with a part per rank).
    s.info = own.info;
    const PartitionBook type_book = s.book;
    const auto load = [t, type_book, F](const PartitionInfo& info, PartId k) {
      Shard peer = load_shard_rows(info, k);
      Shard v;
      v.part = k;
      v.book = type_book;
      v.feature_dim = F;
      v.feature_dtype = peer.feature_dtype;
      if (peer.feature_dtype == FeatureDtype::kFloat32) v.features = std::move(peer.type_features[static_cast<std::size_t>(t)]);
      else v.features16 = std::move(peer.type_features16[static_cast<std::size_t>(t)]);
      return v;
    };
    p.view = std::make_unique<ShardView>(s, *p.comm, p.comm->node_ids(), config.node_local && comm.size() > 1, load);
    p.store = std::make_unique<FeatureStore>(*p.view, *p.comm);
    p.store->build_cache(config, nullptr);
  }
}

TypedFeatureStore::~TypedFeatureStore() = default;

NodeId TypedFeatureStore::type_id(int t, PartId k, NodeId v) const noexcept {
  return per_type_[static_cast<std::size_t>(t)].first[static_cast<std::size_t>(k)] + (v - types_.run_begin(k, t));
}

const PartitionBook& TypedFeatureStore::type_book(int t) const { return per_type_[static_cast<std::size_t>(t)].book; }

std::vector<NodeId> TypedFeatureStore::owned_dataset_ids(int t) const {
  const auto [first, last] = parts_of_rank(types_.book().parts(), own_.part, own_.book.parts());
  std::vector<NodeId> out;
  for (PartId k = first; k < last; ++k)
    for (NodeId v = types_.run_begin(k, t), end = v + types_.run_size(k, t); v < end; ++v) out.push_back(own_.orig_ids[static_cast<std::size_t>(v - own_.book.begin(own_.part))]);
  return out;
}

void TypedFeatureStore::fetch(std::span<const NodeId> nodes, std::vector<FeatureRows>& rows, std::vector<std::vector<std::int64_t>>& at,
                              std::vector<std::vector<NodeId>>& ids) {
  const auto T = static_cast<std::size_t>(types_.num_types());
  rows.resize(T);
  at.assign(T, {});
  ids.assign(T, {});
  for (PerType& p : per_type_) p.ids.clear();
  // One lookup a node: its type picks the list, its part its place in the type's numbering.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto [k, t] = types_.locate(nodes[i]);
    const auto ti = static_cast<std::size_t>(t);
    at[ti].push_back(static_cast<std::int64_t>(i));
    (per_type_[ti].store ? per_type_[ti].ids : ids[ti]).push_back(type_id(t, k, nodes[i]));
  }
  // Every rank fetches every featured type, in type order, whatever it holds of it: each fetch is
  // a collective on the type's communicator.
  for (std::size_t t = 0; t < T; ++t) {
    PerType& p = per_type_[t];
    if (!p.store) {
      rows[t].clear();
      continue;
    }
    p.store->fetch(p.ids, rows[t]);
  }
}

void TypedFeatureStore::fetch(MiniBatch& mb) {
  fetch(mb.input_nodes(), mb.type_features, mb.type_at, mb.type_ids);
  mb.node_types.assign(mb.input_nodes().size(), 0);
  for (std::size_t t = 0; t < mb.type_at.size(); ++t)
    for (const std::int64_t i : mb.type_at[t]) mb.node_types[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(t);
}

FeatureCounters TypedFeatureStore::counters() const {
  FeatureCounters sum;
  for (const PerType& p : per_type_)
    if (p.store) sum = sum + p.store->counters();
  return sum;
}

}  // namespace shardgnn
