#include "partition/verify.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <tuple>
#include <vector>

#include "datasets/array_dir.hpp"
#include "datasets/error.hpp"
#include "datasets/feature_dtype.hpp"
#include "partition/shard_loader.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {

// Whether shard row i carries the same (neighbour, value) pairs as dataset node u's row, where an
// entry's value is the shard's `got_value(e)` and the dataset's `want_value(e)` (its weight, its
// relation). `got` and `want` are scratch.
using ValuedRow = std::vector<std::pair<NodeId, std::int64_t>>;
template <class ShardView, class DatasetView, class Got, class Want>
bool same_valued_row(const Shard& s, const ShardView& sg, NodeId i, const std::vector<NodeId>& old_of_new, const Dataset& ds, const DatasetView& dg, NodeId u,
                     Got got_value, Want want_value, ValuedRow& got, ValuedRow& want) {
  const auto nb = sg.neighbors(i);
  const EdgeId at = s.graph.indptr()[i], want_at = ds.graph.indptr()[u];
  got.clear();
  want.clear();
  for (std::size_t j = 0; j < nb.size(); ++j) got.emplace_back(old_of_new[static_cast<std::size_t>(nb[j])], got_value(at + static_cast<EdgeId>(j)));
  const auto dn = dg.neighbors(u);
  for (std::size_t j = 0; j < dn.size(); ++j) want.emplace_back(dn[j], want_value(want_at + static_cast<EdgeId>(j)));
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  return got == want;
}

// Whether shard row i's features are the dataset row's (float32, or narrowed to the shard's
// 2-byte dtype as the writer narrows it: the same bits). `narrowed` is scratch.
bool same_row(FeatureDtype stored, const void* got, const float* want, std::size_t F, std::vector<std::uint16_t>& narrowed) {
  if (stored == FeatureDtype::kFloat32) return std::equal(want, want + F, static_cast<const float*>(got));
  narrowed.resize(F);
  narrow_values(stored, want, F, narrowed.data());
  return std::memcmp(narrowed.data(), got, F * sizeof(std::uint16_t)) == 0;
}
bool same_features(const Shard& s, NodeId i, const float* want, std::vector<std::uint16_t>& narrowed) {
  return same_row(s.feature_dtype, s.feature_row(i), want, static_cast<std::size_t>(s.feature_dim), narrowed);
}

// The comparison of loaded shards with their dataset, step by step; problems go to `err`, at most
// 20 of them about single shards so that a wholesale mismatch stays readable.
class ShardComparison {
 public:
  ShardComparison(const Dataset& ds, const PartitionInfo& info, const std::vector<Shard>& shards, const std::string& partition_dir,
                  std::vector<std::string>& err)
      : ds_(ds), info_(info), shards_(shards), dir_(partition_dir), err_(err) {}

  // orig_ids must be a permutation of the dataset's nodes; it defines new -> old. False if not.
  bool map_ids() {
    const std::int64_t n = ds_.num_nodes();
    old_of_new_.assign(static_cast<std::size_t>(n), -1);
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(n), 0);
    for (const Shard& s : shards_)
      for (std::size_t i = 0; i < s.orig_ids.size(); ++i) {
        const NodeId v = s.orig_ids[i];
        if (v < 0 || v >= n || seen[v]) {
          fail(s.part, "orig_ids.npy: element " + std::to_string(i) + ": node " + std::to_string(v) + (v < 0 || v >= n ? " out of range" : " owned twice"));
          continue;
        }
        seen[v] = 1;
        old_of_new_[info_.book.begin(s.part) + static_cast<NodeId>(i)] = v;
      }
    return err_.empty();
  }

  // Shard s's rows, weights, features and labels against the dataset's, and its halo against
  // the remote nodes its rows reach.
  void check_rows(const Shard& s) {
    const PartId k = s.part;
    const std::int64_t n = ds_.num_nodes();
    std::vector<NodeId> halo;
    // Edge weights: present in the shard exactly when the dataset has them (load_shard checked
    // their length), then compared row by row.
    const bool weighted = !ds_.edge_weights.empty();
    const bool listed = info_.parts[static_cast<std::size_t>(k)].arrays.contains("edge_weights");  // a shard with no edges lists an empty one
    if (weighted && !listed) fail(k, "edge_weights.npy: missing, the dataset has edge weights");
    if (!weighted && listed) fail(k, "edge_weights.npy: present, the dataset has no edge weights");
    const bool check_weights = weighted && listed;
    // Relation ids: load_shard checked each row's (relation, neighbour) order; each row must hold
    // the dataset row's (neighbour, relation) pairs.
    const bool related = ds_.schema.relation_ids();
    // The shard's and the dataset's ids may differ in width: the loop is compiled for each pair.
    s.graph.visit([&](const auto& sg) { ds_.graph.visit([&](const auto& dg) {
    for (NodeId i = 0; i < info_.book.size(k); ++i) {
      const NodeId u = s.orig_ids[i];
      const auto nb = sg.neighbors(i);
      row_.clear();
      bool in_range = true;
      for (std::size_t j = 0; j < nb.size(); ++j) {
        if (nb[j] < 0 || nb[j] >= n) { in_range = false; break; }
        if (j > 0 && nb[j - 1] > nb[j] && !related) fail(k, "indices.npy: row " + std::to_string(i) + " is not sorted");
        row_.push_back(old_of_new_[nb[j]]);
        if (info_.book.owner(nb[j]) != k) halo.push_back(nb[j]);
      }
      if (!in_range) { fail(k, "indices.npy: row " + std::to_string(i) + " has a node id out of range"); continue; }
      std::sort(row_.begin(), row_.end());
      want_row_.assign(dg.neighbors(u).begin(), dg.neighbors(u).end());
      if (related) std::sort(want_row_.begin(), want_row_.end());
      if (row_ != want_row_)
        fail(k, "row " + std::to_string(i) + " (dataset node " + std::to_string(u) + ") has " + std::to_string(row_.size()) +
                    " neighbours that differ from the dataset's " + std::to_string(want_row_.size()));
      else if (check_weights && !same_valued_row(s, sg, i, old_of_new_, ds_, dg, u, [&](EdgeId e) { return s.edge_weights[e]; },
                                                 [&](EdgeId e) { return ds_.edge_weights[e]; }, got_, want_valued_))
        fail(k, "edge_weights.npy: row " + std::to_string(i) + " (dataset node " + std::to_string(u) + ") has weights that differ from the dataset's");
      else if (related && !same_valued_row(s, sg, i, old_of_new_, ds_, dg, u, [&](EdgeId e) { return s.edge_relations[static_cast<std::size_t>(e)]; },
                                           [&](EdgeId e) { return ds_.edge_relations[static_cast<std::size_t>(e)]; }, got_, want_valued_))
        fail(k, "edge_relations.npy: row " + std::to_string(i) + " (dataset node " + std::to_string(u) + ") has relations that differ from the dataset's");
      if (ds_.feature_dim > 0 && !(ds_.feature_dtype == s.feature_dtype && s.feature_dtype != FeatureDtype::kFloat32
                                       ? std::memcmp(s.feature_row(i), ds_.features16.data() + u * ds_.feature_dim, s.feature_row_bytes()) == 0
                                       : same_features(s, i, ds_.feature_row_f32(u, wide_.data()), narrowed_)))
        fail(k, "features.npy: row " + std::to_string(i) + " differs from dataset node " + std::to_string(u));
      if (ds_.num_classes > 0 && !ds_.multilabel && s.labels[i] != ds_.labels[u])
        fail(k, "labels.npy: element " + std::to_string(i) + " differs from dataset node " + std::to_string(u));
      if (const std::int64_t row = label_row_bytes(ds_.num_classes); ds_.multilabel && row > 0 &&
          !std::equal(s.label_bits.data() + i * row, s.label_bits.data() + (i + 1) * row, ds_.label_bits.data() + u * row))
        fail(k, "label_bits.npy: row " + std::to_string(i) + " differs from dataset node " + std::to_string(u));
    }
    }); });
    check_halo(s, std::move(halo));
  }

  // A typed graph: partition.json's node types and relations are the dataset's; each part's halo
  // per type and its per-type feature rows match (load_shard checked that each type's run of the
  // part holds nodes of that type).
  void check_types() {
    boost::json::object mine, theirs;
    schema_to_json(info_.dataset.schema, mine);
    schema_to_json(ds_.schema, theirs);
    if (mine != theirs) {
      err_.push_back(dir_ + ": partition.json's node types and relations differ from the dataset's");
      return;
    }
    const GraphSchema& g = ds_.schema;
    for (const Shard& s : shards_) {
      std::vector<std::int64_t> halo(static_cast<std::size_t>(g.num_types()), 0);
      for (const NodeId h : s.halo_nodes) ++halo[static_cast<std::size_t>(g.type_of(old_of_new_[h]))];
      if (halo != info_.parts[static_cast<std::size_t>(s.part)].type_halo) fail(s.part, "partition.json: type_halo differs from the halo's node types");
      NodeId i = 0;
      for (int t = 0; t < g.num_types(); ++t) {
        const std::int64_t F = g.types()[static_cast<std::size_t>(t)].feature_dim;
        std::vector<float> want_row(static_cast<std::size_t>(F));
        for (std::int64_t r = 0; r < s.type_nodes[static_cast<std::size_t>(t)]; ++r, ++i) {
          if (F == 0) continue;
          const NodeId u = s.orig_ids[static_cast<std::size_t>(i)];
          // The dataset's row, widened and narrowed again as the shard stores it (a 2-byte row
          // narrows back to its own bits).
          const void* got = s.feature_dtype == FeatureDtype::kFloat32 ? static_cast<const void*>(s.type_features[static_cast<std::size_t>(t)].data() + r * F)
                                                                       : static_cast<const void*>(s.type_features16[static_cast<std::size_t>(t)].data() + r * F);
          const bool same = same_row(s.feature_dtype, got, ds_.type_row_f32(t, u - g.begin(t), want_row.data()), static_cast<std::size_t>(F), narrowed_);
          if (!same)
            fail(s.part, "features_" + g.types()[static_cast<std::size_t>(t)].name + ".npy: row " + std::to_string(r) + " differs from dataset node " +
                             std::to_string(u));
        }
      }
    }
  }

  // Splits: the union over shards, mapped back, equals the dataset's; each shard lists only its own nodes.
  void check_splits() {
    for (auto [name, member, source] : {std::tuple{"train_idx", &Shard::train_idx, &ds_.train_idx}, std::tuple{"val_idx", &Shard::val_idx, &ds_.val_idx},
                                        std::tuple{"test_idx", &Shard::test_idx, &ds_.test_idx}}) {
      std::vector<NodeId> all;
      for (const Shard& s : shards_)
        for (const NodeId g : s.*member) {
          if (g < info_.book.begin(s.part) || g >= info_.book.end(s.part)) {
            fail(s.part, std::string(name) + ".npy: node " + std::to_string(g) + " is not owned by this part");
            continue;
          }
          all.push_back(old_of_new_[g]);
        }
      std::sort(all.begin(), all.end());
      std::vector<NodeId> want(source->begin(), source->end());
      std::sort(want.begin(), want.end());
      if (all != want)
        err_.push_back(dir_ + ": the shards' " + name + " differ from the dataset's (" + std::to_string(all.size()) + " vs " + std::to_string(want.size()) + " nodes)");
    }
  }

  // Held-out rows: the union over shards, mapped back, equals the dataset's (as multisets of
  // rows); each row sits with the part of its first node (load_shard checks that).
  void check_held_out() {
    if (info_.dataset.edge_split != ds_.edge_split || info_.dataset.eval_negatives != ds_.eval_negatives) {
      err_.push_back(dir_ + ": partition.json's edge split differs from the dataset's");
      return;
    }
    std::vector<const Shard*> shards;
    for (const Shard& s : shards_) shards.push_back(&s);
    for_each_held_out(ds_, [&](const char* name, const Array<NodeId>& rows, std::int64_t cols, const Array<NodeId>& lead, bool) {
      // A row is compared with its lead (a ranking row with its positive), so that a row moved
      // to another positive is caught.
      const bool ranking = &lead != &rows;
      const auto c = static_cast<std::size_t>(cols);
      std::vector<std::vector<NodeId>> got, want;
      for (std::size_t i = 0; i < rows.size() / c; ++i) {
        std::vector<NodeId> row(rows.begin() + i * c, rows.begin() + (i + 1) * c);
        if (ranking) row.insert(row.begin(), lead.begin() + 2 * i, lead.begin() + 2 * i + 2);
        want.push_back(std::move(row));
      }
      for (const Shard* s : shards) {
        const Array<NodeId>* srows = nullptr;
        const Array<NodeId>* slead = nullptr;
        for_each_held_out(*s, [&](const char* n2, const Array<NodeId>& r2, std::int64_t, const Array<NodeId>& l2, bool) {
          if (std::string_view(n2) == name) srows = &r2, slead = &l2;
        });
        if (srows == nullptr) continue;
        for (std::size_t i = 0; i < srows->size() / c; ++i) {
          std::vector<NodeId> row;
          if (ranking) row = {old_of_new_[(*slead)[2 * i]], old_of_new_[(*slead)[2 * i + 1]]};
          for (std::size_t j = 0; j < c; ++j) row.push_back(old_of_new_[(*srows)[i * c + j]]);
          got.push_back(std::move(row));
        }
      }
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      if (got != want) err_.push_back(dir_ + ": the shards' " + name + " rows differ from the dataset's (" + std::to_string(got.size()) + " vs " + std::to_string(want.size()) + ")");
    });
  }

 private:
  void fail(PartId k, const std::string& what) {
    if (err_.size() < 20) err_.push_back(dir_ + "/part-" + std::to_string(k) + ": " + what);
  }

  // `reached`: the remote ids of shard s's rows, with repeats.
  void check_halo(const Shard& s, std::vector<NodeId> reached) {
    std::sort(reached.begin(), reached.end());
    reached.erase(std::unique(reached.begin(), reached.end()), reached.end());
    if (!std::equal(reached.begin(), reached.end(), s.halo_nodes.begin(), s.halo_nodes.end()))
      fail(s.part, "halo_nodes.npy: " + std::to_string(s.halo_nodes.size()) + " nodes, the shard's edges reach " + std::to_string(reached.size()) + " remote nodes");
    for (std::size_t i = 0; i < s.halo_owner.size() && i < s.halo_nodes.size(); ++i)
      if (s.halo_owner[i] != info_.book.owner(s.halo_nodes[i])) {
        fail(s.part, "halo_owner.npy: element " + std::to_string(i) + " names part " + std::to_string(s.halo_owner[i]) + ", the book says " +
                         std::to_string(info_.book.owner(s.halo_nodes[i])));
        break;
      }
  }

  const Dataset& ds_;
  const PartitionInfo& info_;
  const std::vector<Shard>& shards_;
  const std::string& dir_;
  std::vector<std::string>& err_;
  std::vector<NodeId> old_of_new_;
  std::vector<NodeId> row_, want_row_;  // scratch of check_rows
  ValuedRow got_, want_valued_;
  std::vector<std::uint16_t> narrowed_;
  std::vector<float> wide_ = std::vector<float>(static_cast<std::size_t>(ds_.feature_dim));  // a 2-byte dataset row, widened
};

// The dataset, partition.json and every shard, each part's files checked against their
// checksums first; false (with the problems in `err`) when the rest cannot be compared.
bool load_inputs(const std::string& dataset_dir, const std::string& partition_dir, Dataset& ds, std::shared_ptr<const PartitionInfo>& info,
                 std::vector<Shard>& shards, std::vector<std::string>& err) {
  try {
    ds = load_dataset(dataset_dir);
    info = std::make_shared<const PartitionInfo>(load_partition_info(partition_dir));
  } catch (const InputError& e) {
    err.push_back(e.what());
    return false;
  }
  const std::string pj = (fs::path(partition_dir) / "partition.json").string();
  const std::int64_t n = ds.num_nodes();
  if (info->dataset.num_nodes != n || info->dataset.num_edges != ds.graph.num_edges() || info->dataset.name != ds.name) {
    err.push_back(pj + ": made from dataset '" + info->dataset.name + "' (" + std::to_string(info->dataset.num_nodes) + " nodes, " +
                  std::to_string(info->dataset.num_edges) + " edges), not from " + dataset_dir + " ('" + ds.name + "', " + std::to_string(n) + " nodes)");
    return false;
  }
  for (const PartEntry& p : info->parts) verify_listed_checksums(p.path, p.arrays, pj, err);
  if (!err.empty()) return false;
  try {
    for (PartId k = 0; k < info->book.parts(); ++k) shards.push_back(load_shard(info, k));
  } catch (const InputError& e) {
    err.push_back(e.what());
    return false;
  }
  return true;
}

}  // namespace

ValidationResult verify_partition(const std::string& dataset_dir, const std::string& partition_dir) {
  ValidationResult res;
  Dataset ds;
  std::shared_ptr<const PartitionInfo> info;
  std::vector<Shard> shards;
  if (!load_inputs(dataset_dir, partition_dir, ds, info, shards, res.errors)) return res;
  ShardComparison compare(ds, *info, shards, partition_dir, res.errors);
  if (!compare.map_ids()) return res;
  for (const Shard& s : shards) compare.check_rows(s);
  compare.check_splits();
  compare.check_held_out();
  if (ds.schema.typed() || info->dataset.schema.typed()) compare.check_types();
  return res;
}

}  // namespace shardgnn
