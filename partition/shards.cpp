#include "partition/shards.hpp"

#include <algorithm>
#include <bit>
#include <type_traits>
#include <filesystem>
#include <functional>
#include <limits>
#include <numeric>

#include "datasets/array_dir.hpp"
#include "datasets/checks.hpp"
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/json_util.hpp"
#include "partition/parallel.hpp"
#include "partition/partitioner.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {

constexpr const char* kFormatName = "shardgnn-partition";

std::string part_dir_name(PartId k) { return "part-" + std::to_string(k); }

boost::json::object parameters_json(const PartitionConfig& c) {
  boost::json::array balance;
  for (auto k : c.balance) balance.push_back(boost::json::string(balance_name(k)));
  boost::json::array fanouts;
  for (int f : c.cost_fanouts) fanouts.push_back(f);
  return {{"parts", c.parts},
          {"method", method_name(c.method)},
          {"balance", balance},
          {"objective", objective_name(c.objective)},
          {"edge_weights", edge_weighting_name(c.edge_weights)},
          {"imbalance", c.imbalance},
          {"seed", c.seed},
          {"stream_shuffle", c.stream_shuffle},
          {"fennel_gamma", c.fennel_gamma},
          {"cost_fanouts", fanouts},
          {"cost_remote_weight", c.cost_remote_weight}};
}

// Node ids of `split` owned by part k, as sorted new ids.
std::vector<NodeId> split_of_part(const Array<NodeId>& split, const Relabelling& r, PartId k) {
  std::vector<NodeId> out;
  for (NodeId v : split.span()) {
    const NodeId g = r.new_of_old[v];
    if (g >= r.book.begin(k) && g < r.book.end(k)) out.push_back(g);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Relabels one dataset row into a shard's indices, sorted by new id. A dataset row is sorted
// (by the format) and relabelling keeps each part's nodes in dataset order, so the relabelled
// row is one sorted run per owner part, interleaved: placing the entries by owner with a
// counting pass sorts it in O(degree + K). A per-row std::sort was the writer's largest cost.
// A row found unsorted afterwards (a dataset breaking the format) is sorted the slow way.
// `Id` is the type of the new-id table: 32-bit where the ids fit, which halves the cache the
// random lookups need, a notable part of the writer's time.
// With `id_bits` > 0 each table entry carries the node's part above its low id_bits bits (the new
// id), so the counting pass reads a row's owners from the lookup it makes anyway instead of
// searching the partition book per entry.
template <class Id>
class RowRelabeller {
 public:
  RowRelabeller(const Id* new_of_old, const PartitionBook& book, int id_bits)
      : new_of_old_(new_of_old), book_(book), parts_(book.parts()), start_(static_cast<std::size_t>(parts_) + 1), id_bits_(id_bits),
        id_mask_(id_bits > 0 ? static_cast<Id>((Id{1} << id_bits) - 1) : static_cast<Id>(~Id{0})) {}

  // Writes the row of node `u`, `nb` (edge weights `w`, or null), relabelled and sorted into
  // `out` (`w_out`), sets the bit of every new id it reaches in `reached`, and adds the row to
  // the shard's metrics in `tally`.
  void operator()(NodeId u, std::span<const NodeId> nb, const std::int64_t* w, NodeId* out, std::int64_t* w_out, std::uint64_t* reached,
                  RowTally& tally) {
    const std::size_t d = nb.size();
    const Id* new_of_old = new_of_old_;
    tally.begin_row(u);
    if (d < kCountingFrom || d < static_cast<std::size_t>(parts_)) {
      for (std::size_t j = 0; j < d; ++j) {
        const Id t = new_of_old[nb[j]];
        const NodeId g = static_cast<NodeId>(t & id_mask_);
        out[j] = g;
        reached[g >> 6] |= std::uint64_t{1} << (g & 63);
        tally.entry(nb[j], owner_of(t, g));
      }
      tally.end_row();
      if (w) std::copy_n(w, d, w_out);
      sort_row(out, w_out, d);
      return;
    }
    ids_.resize(d);
    tags_.resize(d);
    std::fill(start_.begin(), start_.end(), 0);
    auto count = [&](auto per_entry) {
      for (std::size_t j = 0; j < d; ++j) {
        // 24 entries ahead: at 8 the lookups' loads were the writer's largest stall.
        if (j + 24 < d) __builtin_prefetch(new_of_old + nb[j + 24]);
        const Id t = new_of_old[nb[j]];
        const NodeId g = static_cast<NodeId>(t & id_mask_);
        const PartId p = owner_of(t, g);
        ids_[j] = g;
        tags_[j] = p;
        ++start_[static_cast<std::size_t>(p) + 1];
        reached[g >> 6] |= std::uint64_t{1} << (g & 63);
        if constexpr (decltype(per_entry)::value) tally.entry(nb[j], p);
      }
    };
    // The per-part counts this pass makes anyway are the row's metrics where pairs come from
    // entries (a graph recorded symmetric without repeats): no work per entry for them.
    if (tally.counts_rows()) {
      count(std::false_type{});
      tally.counted_row(std::span<const EdgeId>(start_.data() + 1, static_cast<std::size_t>(parts_)), d);
    } else {
      count(std::true_type{});
      tally.end_row();
    }
    for (int p = 0; p < parts_; ++p) start_[p + 1] += start_[p];
    for (std::size_t j = 0; j < d; ++j) {
      const EdgeId at = start_[tags_[j]]++;
      out[at] = ids_[j];
      if (w) w_out[at] = w[j];
    }
    if (!std::is_sorted(out, out + d)) sort_row(out, w ? w_out : nullptr, d);
  }

  // Asks for the new ids of a row's first entries ahead of its turn: a short row has no time to
  // prefetch its own lookups.
  void prefetch(std::span<const NodeId> nb) const noexcept {
    for (std::size_t j = 0, e = std::min<std::size_t>(nb.size(), kCountingFrom); j < e; ++j) __builtin_prefetch(new_of_old_ + nb[j]);
  }

 private:
  PartId owner_of(Id entry, NodeId id) const noexcept {
    return id_bits_ > 0 ? static_cast<PartId>(entry >> id_bits_) : book_.owner(id);
  }

  // Rows shorter than this go through std::sort (an insertion sort at that size).
  static constexpr std::size_t kCountingFrom = 16;

  // Sorts a row by id, carrying its weights along when there are any; repeated ids keep their
  // order (as the counting pass does), so a row's bytes do not depend on its length.
  void sort_row(NodeId* out, std::int64_t* w_out, std::size_t d) {
    if (!w_out) {
      std::sort(out, out + d);
      return;
    }
    pairs_.clear();
    for (std::size_t j = 0; j < d; ++j) pairs_.emplace_back(out[j], static_cast<std::int64_t>(j));
    std::sort(pairs_.begin(), pairs_.end());  // by id, then by position
    weights_.assign(w_out, w_out + d);
    for (std::size_t j = 0; j < d; ++j) {
      out[j] = pairs_[j].first;
      w_out[j] = weights_[static_cast<std::size_t>(pairs_[j].second)];
    }
  }

  const Id* new_of_old_;
  const PartitionBook& book_;
  int parts_;
  std::vector<EdgeId> start_;
  int id_bits_;
  Id id_mask_;
  std::vector<NodeId> ids_;
  std::vector<PartId> tags_;
  std::vector<std::pair<NodeId, std::int64_t>> pairs_;  // (id, position in the row)
  std::vector<std::int64_t> weights_;
};

// Entries (ids, or feature values) per chunk of a streamed shard array: 512 KB of ids, within a
// core's L2.
constexpr std::int64_t kWriteChunkEntries = 64 * 1024;
// How many rows ahead the writer asks for a row's new-id lookups.
constexpr NodeId kPrefetchRows = 4;

// What a writer worker keeps from one shard to the next.
template <class Id>
struct WriterScratch {
  WriterScratch(const Id* new_of_old, const PartitionBook& book, NodeId num_nodes, int id_bits)
      : relabel(new_of_old, book, id_bits), reached(static_cast<std::size_t>(num_nodes + 63) / 64) {}
  RowRelabeller<Id> relabel;
  std::vector<std::uint64_t> reached;  // a bit per node: reached by the shard's rows
  std::vector<NodeId> ids;
  std::vector<std::int64_t> weights;
  std::vector<float> features;
};

}  // namespace

PartitionMetrics write_partitioned(const Dataset& ds, const std::string& dataset_dir, const PartitionResult& result, const std::string& out_dir,
                                   const WriteOptions& options) {
  const int K = result.config.parts;
  // Each shard's share of the metrics, counted in the pass over its rows: a separate walk of the
  // graph was a large share of the `partition` command.
  std::vector<ShardTally> tallies(static_cast<std::size_t>(K));
  PartitionMetrics metrics;
  const Relabelling r = relabel(result.assignment, K);
  // The rows' lookups go through a 32-bit copy of new_of_old where the ids fit, with each node's
  // part in the high bits where those fit too (see RowRelabeller).
  std::vector<std::uint32_t> narrow;
  int id_bits = 0;
  if (ds.num_nodes() <= (NodeId{1} << 32) && options.narrow_ids) {
    const int need_id = std::max(1, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(std::max<NodeId>(ds.num_nodes(), 1) - 1))));
    const int need_part = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(std::max(K, 1) - 1)));
    if (need_part > 0 && need_id + need_part <= 32 && options.pack_parts) id_bits = need_id;
    narrow.resize(r.new_of_old.size());  // == ds.num_nodes() == result.assignment.size()
    for (std::size_t v = 0; v < narrow.size(); ++v)
      narrow[v] = static_cast<std::uint32_t>(r.new_of_old[v]) | (id_bits > 0 ? static_cast<std::uint32_t>(result.assignment[v]) << id_bits : 0u);
  }
  const std::int64_t F = ds.feature_dim;
  const std::string meta_path = (fs::path(dataset_dir) / "meta.json").string();
  const std::string meta_crc = fs::exists(meta_path) ? hex32(crc32_of_file(meta_path)) : "";

  // One shard's arrays, written under `tmp`, with a worker's scratch.
  auto write_part = [&](const std::string& tmp, PartId k, auto& scratch) {
    const std::string pdir = (fs::path(tmp) / part_dir_name(k)).string();
    fs::create_directory(pdir);
    const NodeId first = r.book.begin(k), count = r.book.size(k);
    const bool weighted = !ds.edge_weights.empty();
    std::vector<EdgeId> indptr(static_cast<std::size_t>(count) + 1, 0);
    for (NodeId i = 0; i < count; ++i) indptr[i + 1] = indptr[i] + ds.graph.degree(r.old_of_new[first + i]);
    const EdgeId m = indptr.back();
    // Distinct remote targets: every row marks the ids it reaches in a bitmap (a bit per node, so
    // it stays in cache where a stamp per node did not); the set bits outside the part, read in
    // order, are the sorted halo. The bitmap is all zeros here: the scan below clears what it
    // reads. A pass over n bits per part costs less than the part's rows unless K exceeds ~64x
    // the mean degree.
    std::vector<std::uint64_t>& reached = scratch.reached;
    RowTally tally(ds, k, K);
    // The relabelled rows go out in chunks that stay in cache (a run of rows, or one longer row):
    // no shard-sized copy of the indices is built, faulted in and read again to be written.
    auto relabel_rows = [&](const NpySink& ids_out, const NpySink* weights_out) {
      for (NodeId i = 0; i < count;) {
        const EdgeId e0 = indptr[i];
        NodeId j = i + 1;
        while (j < count && indptr[j + 1] - e0 <= kWriteChunkEntries) ++j;
        const auto len = static_cast<std::size_t>(indptr[j] - e0);
        if (scratch.ids.size() < len) scratch.ids.resize(len);
        if (weighted && scratch.weights.size() < len) scratch.weights.resize(len);
        for (NodeId row = i; row < j; ++row) {
          if (row + kPrefetchRows < count) scratch.relabel.prefetch(ds.graph.neighbors(r.old_of_new[first + row + kPrefetchRows]));
          const NodeId u = r.old_of_new[first + row];
          const std::size_t at = static_cast<std::size_t>(indptr[row] - e0);
          scratch.relabel(u, ds.graph.neighbors(u), weighted ? ds.edge_weights.data() + ds.graph.indptr()[u] : nullptr, scratch.ids.data() + at,
                          weighted ? scratch.weights.data() + at : nullptr, reached.data(), tally);
        }
        ids_out(scratch.ids.data(), len * sizeof(NodeId));
        if (weighted) (*weights_out)(scratch.weights.data(), len * sizeof(std::int64_t));
        i = j;
      }
    };
    boost::json::object arrays, weights_entry;
    arrays["indptr"] = write_listed_array(pdir, "indptr", indptr);
    arrays["indices"] = write_listed_array_streamed(pdir, "indices", dtype_of<NodeId>(), {m}, [&](const NpySink& ids_out) {
      if (!weighted) return relabel_rows(ids_out, nullptr);
      weights_entry = write_listed_array_streamed(pdir, "edge_weights", dtype_of<std::int64_t>(), {m},
                                                  [&](const NpySink& weights_out) { relabel_rows(ids_out, &weights_out); });
    });
    std::vector<NodeId> halo;
    for (std::size_t wi = 0; wi < reached.size(); ++wi) {
      for (std::uint64_t bits = reached[wi]; bits != 0; bits &= bits - 1) {
        const NodeId v = static_cast<NodeId>(wi * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
        if (v < first || v >= first + count) halo.push_back(v);
      }
      reached[wi] = 0;
    }
    tally.tally.halo = static_cast<std::int64_t>(halo.size());
    tallies[static_cast<std::size_t>(k)] = tally.tally;
    std::vector<PartId> halo_owner(halo.size());
    for (std::size_t i = 0; i < halo.size(); ++i) halo_owner[i] = r.book.owner(halo[i]);
    std::vector<NodeId> orig(r.old_of_new.begin() + first, r.old_of_new.begin() + first + count);

    if (F > 0) {
      // Rows gathered into a cache-sized chunk at a time, like the indices.
      const NodeId rows_per_chunk = std::max<NodeId>(1, static_cast<NodeId>(kWriteChunkEntries) / F);
      arrays["features"] = write_listed_array_streamed(pdir, "features", DType::kFloat32, {count, F}, [&](const NpySink& out) {
        for (NodeId i = 0; i < count; i += rows_per_chunk) {
          const NodeId rows = std::min(rows_per_chunk, count - i);
          scratch.features.resize(static_cast<std::size_t>(rows * F));
          for (NodeId j = 0; j < rows; ++j) std::copy_n(ds.features.data() + orig[i + j] * F, F, scratch.features.data() + j * F);
          out(scratch.features.data(), scratch.features.size() * sizeof(float));
        }
      });
    }
    if (ds.num_classes > 0) {
      std::vector<std::int64_t> labels(static_cast<std::size_t>(count));
      for (NodeId i = 0; i < count; ++i) labels[i] = ds.labels[orig[i]];
      arrays["labels"] = write_listed_array(pdir, "labels", labels);
    }
    arrays["train_idx"] = write_listed_array(pdir, "train_idx", split_of_part(ds.train_idx, r, k));
    arrays["val_idx"] = write_listed_array(pdir, "val_idx", split_of_part(ds.val_idx, r, k));
    arrays["test_idx"] = write_listed_array(pdir, "test_idx", split_of_part(ds.test_idx, r, k));
    arrays["halo_nodes"] = write_listed_array(pdir, "halo_nodes", halo);
    arrays["halo_owner"] = write_listed_array(pdir, "halo_owner", halo_owner);
    arrays["orig_ids"] = write_listed_array(pdir, "orig_ids", orig);
    if (weighted) arrays["edge_weights"] = std::move(weights_entry);
    // The shard's big arrays sit in the page cache as written, in folios no larger than the
    // writes. Dropped here (each file is fsynced), they are read back by the first job that maps
    // them, in the 2 MiB folios it asks for (map_file), and mapped with 2 MiB pages: the sampler's
    // random reads then miss the TLB less than in the writer's folios or in 4 KiB pages. (Larger
    // writes instead, 2 MiB through stdio, now and then made the kernel's copy into the page
    // cache much slower.)
    for (const auto& entry : fs::directory_iterator(pdir))
      if (entry.is_regular_file() && entry.file_size() >= (std::uintmax_t{2} << 20)) drop_page_cache(entry.path().string());
    return boost::json::object{{"dir", part_dir_name(k)}, {"nodes", count}, {"edges", m},
                               {"halo", static_cast<std::int64_t>(halo.size())}, {"arrays", std::move(arrays)}};
  };

  // Writes the parts listed in `mine` under `tmp`, one worker per core, each taking the next part.
  // Nothing may escape a worker (it would leave the temporary folder behind): a worker's failure
  // is rethrown here.
  std::vector<boost::json::object> part_json(static_cast<std::size_t>(K));
  auto write_parts = [&](const std::string& tmp, const std::vector<PartId>& mine) {
    auto write_all = [&](const auto* new_of_old) {
      using Id = std::remove_cv_t<std::remove_pointer_t<decltype(new_of_old)>>;
      for_each_part_parallel(
          static_cast<int>(mine.size()), [&] { return WriterScratch<Id>(new_of_old, r.book, ds.num_nodes(), std::is_same_v<Id, std::uint32_t> ? id_bits : 0); },
          [&](int i, WriterScratch<Id>& scratch) {
            const PartId k = mine[static_cast<std::size_t>(i)];
            part_json[static_cast<std::size_t>(k)] = write_part(tmp, k, scratch);
          });
    };
    if (!narrow.empty() || ds.num_nodes() == 0) write_all(narrow.data());
    else write_all(r.new_of_old.data());
  };
  // partition.json, from every part's listing and tally.
  auto write_root = [&](const std::string& tmp) {
    metrics = metrics_from_tallies(ds, result.assignment, result.config, tallies);
    boost::json::array parts_json;
    for (auto& pj : part_json) parts_json.push_back(std::move(pj));
    boost::json::array offsets;
    for (NodeId o : r.book.offsets()) offsets.push_back(o);
    boost::json::object root;
    root["format"] = kFormatName;
    root["version"] = kPartitionFormatVersion;
    root["dataset"] = {{"name", ds.name},
                       {"dir", fs::absolute(dataset_dir).lexically_normal().string()},
                       {"meta_crc32", meta_crc},
                       {"num_nodes", ds.num_nodes()},
                       {"num_edges", ds.graph.num_edges()},
                       {"feature_dim", F},
                       {"num_classes", ds.num_classes}};
    root["method"] = method_name(result.config.method);
    root["parameters"] = parameters_json(result.config);
    root["partition_seconds"] = result.seconds;
    root["num_parts"] = K;
    root["offsets"] = std::move(offsets);
    root["metrics"] = metrics_to_json(metrics);
    root["parts"] = std::move(parts_json);
    write_json_file((fs::path(tmp) / "partition.json").string(), root);
  };

  const PartitionCollective* comm = options.comm;
  if (comm == nullptr || comm->size() == 1) {
    std::vector<PartId> all(static_cast<std::size_t>(K));
    std::iota(all.begin(), all.end(), 0);
    write_dir_atomic(out_dir, options.overwrite, [&](const std::string& tmp) {
      write_parts(tmp, all);
      write_root(tmp);
    });
    return metrics;
  }

  // Over ranks: rank 0 makes the temporary folder (on a filesystem every rank sees), every rank
  // writes parts rank, rank + P, ..., rank 0 gathers their listings and tallies, writes
  // partition.json and puts the folder in place. Any rank's failure is every rank's, and the
  // temporary folder goes.
  const int rank = comm->rank(), ranks = comm->size();
  std::string tmp;
  comm->agree([&] {
    if (rank == 0) tmp = begin_dir_atomic(out_dir, options.overwrite);
  });
  try {
    {
      std::vector<char> name(tmp.begin(), tmp.end());
      comm->broadcast(name, 0);
      tmp.assign(name.begin(), name.end());
    }
    std::vector<PartId> mine;
    for (PartId k = rank; k < K; k += ranks) mine.push_back(k);
    // Each rank's listings as lines of JSON (serialize escapes newlines), parts in order.
    std::string lines;
    comm->agree([&] {
      write_parts(tmp, mine);
      for (const PartId k : mine) lines += boost::json::serialize(part_json[static_cast<std::size_t>(k)]) + "\n";
    });
    const std::vector<char> all_lines = comm->allgatherv<char>(lines);
    const std::vector<ShardTally> all_tallies = comm->allgatherv<ShardTally>(tallies);
    comm->agree([&] {
      if (rank != 0) return;
      std::size_t at = 0;
      for (int from = 0; from < ranks; ++from)
        for (PartId k = from; k < K; k += ranks) {
          const auto end = static_cast<std::size_t>(std::find(all_lines.begin() + static_cast<std::ptrdiff_t>(at), all_lines.end(), '\n') - all_lines.begin());
          part_json[static_cast<std::size_t>(k)] = boost::json::parse(std::string_view(all_lines.data() + at, end - at)).as_object();
          at = end + 1;
        }
      for (PartId k = 0; k < K; ++k) tallies[static_cast<std::size_t>(k)] = all_tallies[static_cast<std::size_t>(k % ranks) * static_cast<std::size_t>(K) + static_cast<std::size_t>(k)];
      write_root(tmp);
      commit_dir_atomic(tmp, out_dir, options.overwrite);
    });
  } catch (...) {
    std::error_code ec;
    if (rank == 0) fs::remove_all(tmp, ec);
    throw;
  }
  return metrics;
}

PartitionInfo load_partition_info(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "", "no such partitioned-dataset folder");
  PartitionInfo info;
  info.dir = dir;
  const std::string path = (fs::path(dir) / "partition.json").string();
  if (!fs::exists(path, ec)) throw InputError(path, "", "missing: not a partitioned dataset (make one with `shardgnn partition`)");
  boost::json::value v = read_json_file(path);
  if (!v.is_object()) throw InputError(path, at_byte(0), "expected a JSON object");
  info.json = std::move(v.get_object());
  const auto& o = info.json;
  if (json_string(o, "format", path) != kFormatName) throw InputError(path, "key 'format'", std::string("expected '") + kFormatName + "'");
  if (json_int(o, "version", path) != kPartitionFormatVersion)
    throw InputError(path, "key 'version'", "this build reads version " + std::to_string(kPartitionFormatVersion));
  const auto& d = json_object(o, "dataset", path);
  info.dataset_name = json_string(d, "name", path);
  info.dataset_dir = json_string(d, "dir", path);
  info.num_nodes = json_int(d, "num_nodes", path);
  info.num_edges = json_int(d, "num_edges", path);
  info.feature_dim = json_int(d, "feature_dim", path);
  info.num_classes = json_int(d, "num_classes", path);
  info.method = json_string(o, "method", path);
  for (auto [key, val] : {std::pair{"num_nodes", info.num_nodes}, {"num_edges", info.num_edges}, {"feature_dim", info.feature_dim}, {"num_classes", info.num_classes}})
    if (val < 0) throw InputError(path, std::string("key 'dataset.") + key + "'", "negative count " + std::to_string(val));
  if (info.num_classes > std::max<std::int64_t>(info.num_nodes, kMaxClassesAnyGraph))
    throw InputError(path, "key 'dataset.num_classes'", std::to_string(info.num_classes) + " classes for " + std::to_string(info.num_nodes) + " nodes");
  const std::int64_t K = json_int(o, "num_parts", path);
  if (K < 1 || K > (std::int64_t{1} << 30)) throw InputError(path, "key 'num_parts'", std::to_string(K) + ", expected a positive number of parts");
  auto* off = o.if_contains("offsets");
  if (!off || !off->is_array() || static_cast<std::int64_t>(off->get_array().size()) != K + 1)
    throw InputError(path, "key 'offsets'", "expected num_parts + 1 = " + std::to_string(K + 1) + " integers");
  std::vector<NodeId> offsets;
  for (const auto& x : off->get_array()) {
    if (!x.is_int64()) throw InputError(path, "key 'offsets'", "expected integers");
    offsets.push_back(x.get_int64());
  }
  if (offsets.front() != 0 || offsets.back() != info.num_nodes || !std::is_sorted(offsets.begin(), offsets.end()))
    throw InputError(path, "key 'offsets'", "expected non-decreasing offsets from 0 to num_nodes = " + std::to_string(info.num_nodes));
  info.book = PartitionBook(std::move(offsets));
  auto* parts = o.if_contains("parts");
  if (!parts || !parts->is_array() || static_cast<std::int64_t>(parts->get_array().size()) != K)
    throw InputError(path, "key 'parts'", "expected " + std::to_string(K) + " entries");
  for (std::int64_t k = 0; k < K; ++k) {
    const auto& entry = parts->get_array()[static_cast<std::size_t>(k)];
    const std::string key = "parts[" + std::to_string(k) + "]";
    if (!entry.is_object()) throw InputError(path, "key '" + key + "'", "expected an object");
    json_object(entry.get_object(), "arrays", path);
    info.part_dirs.push_back(confined_path(dir, json_string(entry.get_object(), "dir", path), path, key + ".dir", true, true));
  }
  info.metrics = metrics_from_json(json_object(o, "metrics", path), path);
  return info;
}

namespace {
// Where part k's files are: partition.json's path (for messages), the part's folder, its entry.
struct PartFiles {
  std::string path, pdir;
  const boost::json::object* entry;
  const boost::json::object& arrays() const { return json_object(*entry, "arrays", path); }
};
PartFiles part_files(const PartitionInfo& info, PartId k) {
  PartFiles f;
  f.path = (fs::path(info.dir) / "partition.json").string();
  if (k < 0 || k >= info.book.parts())
    throw InputError(f.path, "", "part " + std::to_string(k) + " requested, the dataset has parts 0.." + std::to_string(info.book.parts() - 1));
  f.entry = &info.json.at("parts").as_array()[static_cast<std::size_t>(k)].as_object();
  f.pdir = info.part_dirs[static_cast<std::size_t>(k)];
  return f;
}

// A part's CSR (n rows, m entries), its ends checked.
CsrGraph load_part_csr(const std::string& pdir, const boost::json::object& arrays, const std::string& path, std::int64_t n, std::int64_t m) {
  auto indptr = load_listed_array<EdgeId>(pdir, arrays, path, "indptr", {n + 1}, true);
  auto indices = load_listed_array<NodeId>(pdir, arrays, path, "indices", {m}, true);
  if (indptr[0] != 0 || indptr[static_cast<std::size_t>(n)] != m)
    throw InputError(pdir + "/indptr.npy", "", "must start at 0 and end at the shard's " + std::to_string(m) + " edges");
  return CsrGraph(std::move(indptr), std::move(indices));
}
}  // namespace

namespace {
// One array of every shard of a group, end to end, in a spill file in `scratch`: page cache the
// kernel can drop and read back, not this process's memory, as the parts' own files are.
template <class T, class Member>
Array<T> concatenated(const std::vector<Shard>& group, Member member, const std::string& scratch) {
  std::size_t total = 0;
  for (const Shard& s : group) total += std::invoke(member, s).size();
  if (total == 0) return {};
  SpillFile spill(scratch);
  for (const Shard& s : group) {
    const Array<T>& a = std::invoke(member, s);
    spill.append(a.data(), a.size() * sizeof(T));
    a.release_pages();
  }
  MappedFile f = spill.map();
  return Array<T>(f.keeper, reinterpret_cast<const T*>(f.bytes.data()), total);
}
}  // namespace

std::pair<PartId, PartId> parts_of_rank(int parts, int rank, int ranks) {
  return {static_cast<PartId>(std::int64_t{parts} * rank / ranks), static_cast<PartId>(std::int64_t{parts} * (rank + 1) / ranks)};
}

Shard load_shard_for_rank(const PartitionInfo& info, int rank, int ranks, const std::string& scratch) {
  const int parts = info.book.parts();
  if (parts < ranks)
    throw InputError(info.dir + ": " + std::to_string(parts) + " parts, but the job has " + std::to_string(ranks) +
                     " ranks (run with mpiexec -n " + std::to_string(parts) + " or fewer: a rank serves one part or more, never less)");
  if (parts == ranks) {
    verify_shard_checksums(info, rank);
    return load_shard(info, rank);
  }
  // Several parts per rank: the contiguous parts [first, last) become one shard of a book with a
  // part per rank. Ids stay global and each part's range follows the one before, so rows, ids and
  // splits join end to end; only the halo is recomputed (neighbours now owned here leave it).
  const auto [first, last] = parts_of_rank(parts, rank, ranks);
  std::vector<Shard> group;
  for (PartId k = first; k < last; ++k) {
    verify_shard_checksums(info, k);
    group.push_back(load_shard(info, k));
  }
  std::vector<NodeId> offsets;
  for (int r = 0; r <= ranks; ++r) offsets.push_back(info.book.begin(parts_of_rank(parts, r, ranks).first));
  Shard s;
  s.dir = info.dir;
  s.part = rank;
  s.book = PartitionBook(std::move(offsets));
  s.merged_parts = last - first;
  s.feature_dim = info.feature_dim;
  s.num_classes = info.num_classes;
  const std::string dir = scratch.empty() ? fs::temp_directory_path().string() : scratch;
  {
    // Row starts continue from the previous part's entries: written in blocks, not held whole.
    SpillFile spill(dir);
    std::vector<EdgeId> block;
    EdgeId base = 0;
    block.push_back(0);
    for (const Shard& g : group) {
      const auto indptr = g.graph.indptr().span();
      for (std::size_t i = 1; i < indptr.size(); ++i) {
        block.push_back(base + indptr[i]);
        if (block.size() == std::size_t{1} << 20) {
          spill.append(block.data(), block.size() * sizeof(EdgeId));
          block.clear();
        }
      }
      base += indptr.back();
    }
    spill.append(block.data(), block.size() * sizeof(EdgeId));
    MappedFile f = spill.map();
    Array<EdgeId> indptr(f.keeper, reinterpret_cast<const EdgeId*>(f.bytes.data()), f.bytes.size() / sizeof(EdgeId));
    s.graph = CsrGraph(std::move(indptr), concatenated<NodeId>(group, [](const Shard& g) -> const Array<NodeId>& { return g.graph.indices(); }, dir));
  }
  s.features = concatenated<float>(group, &Shard::features, dir);
  s.labels = concatenated<std::int64_t>(group, &Shard::labels, dir);
  s.orig_ids = concatenated<NodeId>(group, &Shard::orig_ids, dir);
  s.train_idx = concatenated<NodeId>(group, &Shard::train_idx, dir);
  s.val_idx = concatenated<NodeId>(group, &Shard::val_idx, dir);
  s.test_idx = concatenated<NodeId>(group, &Shard::test_idx, dir);
  s.edge_weights = concatenated<std::int64_t>(group, &Shard::edge_weights, dir);
  const NodeId begin = s.book.begin(rank), end = s.book.end(rank);
  std::vector<NodeId> halo;
  for (const Shard& g : group)
    for (const NodeId v : g.halo_nodes.span())
      if (v < begin || v >= end) halo.push_back(v);
  std::sort(halo.begin(), halo.end());
  halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
  std::vector<PartId> owner(halo.size());
  for (std::size_t i = 0; i < halo.size(); ++i) owner[i] = s.book.owner(halo[i]);
  s.halo_nodes = Array<NodeId>(std::move(halo));
  s.halo_owner = Array<PartId>(std::move(owner));
  return s;
}

namespace {
// What every loaded shard has: its place in the book, its CSR, original ids, features and labels.
Shard load_rows(const PartitionInfo& info, PartId k, const PartFiles& f) {
  const std::int64_t n = info.book.size(k);
  Shard s;
  s.dir = info.dir;
  s.part = k;
  s.book = info.book;
  s.feature_dim = info.feature_dim;
  s.num_classes = info.num_classes;
  s.graph = load_part_csr(f.pdir, f.arrays(), f.path, n, json_int(*f.entry, "edges", f.path));
  s.orig_ids = load_listed_array<NodeId>(f.pdir, f.arrays(), f.path, "orig_ids", {n}, true);
  if (info.feature_dim > 0) s.features = load_listed_array<float>(f.pdir, f.arrays(), f.path, "features", {n, info.feature_dim}, true);
  if (info.num_classes > 0) s.labels = load_listed_array<std::int64_t>(f.pdir, f.arrays(), f.path, "labels", {n}, true);
  return s;
}
}  // namespace

Shard load_shard(const PartitionInfo& info, PartId k) {
  const PartFiles f = part_files(info, k);
  const std::string& path = f.path;
  const std::string& pdir = f.pdir;
  const auto& arrays = f.arrays();
  Shard s = load_rows(info, k, f);
  s.train_idx = load_listed_array<NodeId>(pdir, arrays, path, "train_idx", {listed_length(arrays, path, "train_idx")}, true);
  s.val_idx = load_listed_array<NodeId>(pdir, arrays, path, "val_idx", {listed_length(arrays, path, "val_idx")}, true);
  s.test_idx = load_listed_array<NodeId>(pdir, arrays, path, "test_idx", {listed_length(arrays, path, "test_idx")}, true);
  const std::int64_t h = listed_length(arrays, path, "halo_nodes");
  s.halo_nodes = load_listed_array<NodeId>(pdir, arrays, path, "halo_nodes", {h}, true);
  s.halo_owner = load_listed_array<PartId>(pdir, arrays, path, "halo_owner", {h}, true);
  s.edge_weights = load_listed_array<std::int64_t>(pdir, arrays, path, "edge_weights", {s.graph.num_edges()}, false);
  // What the sampler and trainer index with, checked once here rather than on every access (a
  // node-local peer's rows, load_shard_rows, were checked by the rank that owns them).
  auto file = [&](const char* name) { return (fs::path(pdir) / (std::string(name) + ".npy")).string(); };
  check_csr(s.graph, info.num_nodes, file("indptr"), file("indices"));
  check_range(s.orig_ids.span(), 0, info.num_nodes, file("orig_ids"), "dataset node id");
  if (info.num_classes > 0) check_range(s.labels.span(), -1, info.num_classes, file("labels"), "label");
  for (auto [name, ids] : {std::pair{"train_idx", &s.train_idx}, {"val_idx", &s.val_idx}, {"test_idx", &s.test_idx}})
    check_range(ids->span(), info.book.begin(k), info.book.end(k), file(name), "node id of this part's");
  check_range(s.halo_nodes.span(), 0, info.num_nodes, file("halo_nodes"), "node id");
  for (std::size_t i = 1; i < s.halo_nodes.size(); ++i)
    if (s.halo_nodes[i] <= s.halo_nodes[i - 1])
      throw InputError(file("halo_nodes"), "element " + std::to_string(i), "node " + std::to_string(s.halo_nodes[i]) + " after " +
                                                                                std::to_string(s.halo_nodes[i - 1]) + ": the list must be strictly increasing");
  for (std::size_t i = 0; i < s.halo_nodes.size(); ++i)
    if (s.halo_owner[i] != info.book.owner(s.halo_nodes[i]))
      throw InputError(file("halo_owner"), "element " + std::to_string(i),
                       "part " + std::to_string(s.halo_owner[i]) + ", but the partition book puts node " + std::to_string(s.halo_nodes[i]) + " in part " +
                           std::to_string(info.book.owner(s.halo_nodes[i])));
  check_range(s.edge_weights.span(), 1, std::numeric_limits<std::int64_t>::max(), file("edge_weights"), "edge weight");
  return s;
}

Shard load_shard_rows(const PartitionInfo& info, PartId k) { return load_rows(info, k, part_files(info, k)); }

namespace {
template <class T>
Array<T> view_of(const Array<T>& a) { return Array<T>(nullptr, a.data(), a.size()); }
}  // namespace

Shard shard_from_dataset(const Dataset& ds) {
  Shard s;
  s.part = 0;
  s.book = PartitionBook({0, ds.num_nodes()});
  s.graph = CsrGraph(view_of(ds.graph.indptr()), view_of(ds.graph.indices()));
  s.feature_dim = ds.feature_dim;
  s.num_classes = ds.num_classes;
  s.features = view_of(ds.features);
  s.labels = view_of(ds.labels);
  s.train_idx = view_of(ds.train_idx);
  s.val_idx = view_of(ds.val_idx);
  s.test_idx = view_of(ds.test_idx);
  std::vector<NodeId> ids(static_cast<std::size_t>(ds.num_nodes()));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<NodeId>(i);
  s.orig_ids = Array<NodeId>(std::move(ids));
  s.edge_weights = view_of(ds.edge_weights);
  return s;
}

void verify_shard_checksums(const PartitionInfo& info, PartId k) {
  const std::string path = (fs::path(info.dir) / "partition.json").string();
  if (k < 0 || k >= info.book.parts()) throw InputError(path, "", "no part " + std::to_string(k));
  const auto& pj = info.json.at("parts").as_array()[static_cast<std::size_t>(k)].as_object();
  std::vector<std::string> errors;
  verify_listed_checksums(info.part_dirs[static_cast<std::size_t>(k)], json_object(pj, "arrays", path), path, errors);
  if (!errors.empty()) throw InputError(errors.front());
}

namespace {
// Whether shard row i carries the same (neighbour, weight) pairs as dataset node u's row. The
// shard's weights are known to be present and of the shard's length; `got` and `want` are
// scratch.
using WeightedRow = std::vector<std::pair<NodeId, std::int64_t>>;
bool same_weighted_row(const Shard& s, NodeId i, const std::vector<NodeId>& old_of_new, const Dataset& ds, NodeId u, WeightedRow& got,
                       WeightedRow& want) {
  const auto nb = s.graph.neighbors(i);
  const EdgeId at = s.graph.indptr()[i], want_at = ds.graph.indptr()[u];
  got.clear();
  want.clear();
  for (std::size_t j = 0; j < nb.size(); ++j) got.emplace_back(old_of_new[nb[j]], s.edge_weights[at + static_cast<EdgeId>(j)]);
  const auto dn = ds.graph.neighbors(u);
  for (std::size_t j = 0; j < dn.size(); ++j) want.emplace_back(dn[j], ds.edge_weights[want_at + static_cast<EdgeId>(j)]);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  return got == want;
}
}  // namespace

ValidationResult verify_partition(const std::string& dataset_dir, const std::string& partition_dir) {
  ValidationResult res;
  auto& err = res.errors;
  Dataset ds;
  PartitionInfo info;
  try {
    ds = load_dataset(dataset_dir);
    info = load_partition_info(partition_dir);
  } catch (const InputError& e) {
    err.push_back(e.what());
    return res;
  }
  const std::string pj = (fs::path(partition_dir) / "partition.json").string();
  const std::int64_t n = ds.num_nodes();
  if (info.num_nodes != n || info.num_edges != ds.graph.num_edges() || info.dataset_name != ds.name) {
    err.push_back(pj + ": made from dataset '" + info.dataset_name + "' (" + std::to_string(info.num_nodes) + " nodes, " +
                  std::to_string(info.num_edges) + " edges), not from " + dataset_dir + " ('" + ds.name + "', " + std::to_string(n) + " nodes)");
    return res;
  }
  const int K = info.book.parts();
  const auto& parts = info.json.at("parts").as_array();
  for (int k = 0; k < K; ++k) {
    const auto& p = parts[static_cast<std::size_t>(k)].as_object();
    verify_listed_checksums(info.part_dirs[static_cast<std::size_t>(k)], json_object(p, "arrays", pj), pj, err);
  }
  if (!err.empty()) return res;

  std::vector<Shard> shards;
  try {
    for (PartId k = 0; k < K; ++k) shards.push_back(load_shard(info, k));
  } catch (const InputError& e) {
    err.push_back(e.what());
    return res;
  }
  auto fail = [&](PartId k, const std::string& what) {
    if (err.size() < 20) err.push_back(partition_dir + "/part-" + std::to_string(k) + ": " + what);
  };
  // orig_ids must be a permutation of the dataset's nodes; it defines new -> old.
  std::vector<NodeId> old_of_new(static_cast<std::size_t>(n), -1);
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(n), 0);
  for (const Shard& s : shards)
    for (std::size_t i = 0; i < s.orig_ids.size(); ++i) {
      const NodeId v = s.orig_ids[i];
      if (v < 0 || v >= n || seen[v]) {
        fail(s.part, "orig_ids.npy: element " + std::to_string(i) + ": node " + std::to_string(v) + (v < 0 || v >= n ? " out of range" : " owned twice"));
        continue;
      }
      seen[v] = 1;
      old_of_new[info.book.begin(s.part) + static_cast<NodeId>(i)] = v;
    }
  if (!err.empty()) return res;

  std::vector<NodeId> row;
  WeightedRow got, want_weighted;
  for (const Shard& s : shards) {
    const PartId k = s.part;
    std::vector<NodeId> halo;
    // Edge weights: present in the shard exactly when the dataset has them (load_shard checked
    // their length), then compared row by row.
    const bool weighted = !ds.edge_weights.empty();
    const bool listed = parts[static_cast<std::size_t>(k)].as_object().at("arrays").as_object().contains("edge_weights");  // a shard with no edges lists an empty one
    if (weighted && !listed) fail(k, "edge_weights.npy: missing, the dataset has edge weights");
    if (!weighted && listed) fail(k, "edge_weights.npy: present, the dataset has no edge weights");
    const bool check_weights = weighted && listed;
    for (NodeId i = 0; i < info.book.size(k); ++i) {
      const NodeId u = s.orig_ids[i];
      const auto nb = s.graph.neighbors(i);
      row.clear();
      bool in_range = true;
      for (std::size_t j = 0; j < nb.size(); ++j) {
        if (nb[j] < 0 || nb[j] >= n) { in_range = false; break; }
        if (j > 0 && nb[j - 1] > nb[j]) fail(k, "indices.npy: row " + std::to_string(i) + " is not sorted");
        row.push_back(old_of_new[nb[j]]);
        if (info.book.owner(nb[j]) != k) halo.push_back(nb[j]);
      }
      if (!in_range) { fail(k, "indices.npy: row " + std::to_string(i) + " has a node id out of range"); continue; }
      std::sort(row.begin(), row.end());
      const auto want = ds.graph.neighbors(u);
      if (!std::equal(row.begin(), row.end(), want.begin(), want.end()))
        fail(k, "row " + std::to_string(i) + " (dataset node " + std::to_string(u) + ") has " + std::to_string(row.size()) +
                    " neighbours that differ from the dataset's " + std::to_string(want.size()));
      else if (check_weights && !same_weighted_row(s, i, old_of_new, ds, u, got, want_weighted))
        fail(k, "edge_weights.npy: row " + std::to_string(i) + " (dataset node " + std::to_string(u) + ") has weights that differ from the dataset's");
      if (ds.feature_dim > 0 && !std::equal(s.features.data() + i * ds.feature_dim, s.features.data() + (i + 1) * ds.feature_dim,
                                            ds.features.data() + u * ds.feature_dim))
        fail(k, "features.npy: row " + std::to_string(i) + " differs from dataset node " + std::to_string(u));
      if (ds.num_classes > 0 && s.labels[i] != ds.labels[u])
        fail(k, "labels.npy: element " + std::to_string(i) + " differs from dataset node " + std::to_string(u));
    }
    std::sort(halo.begin(), halo.end());
    halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
    if (!std::equal(halo.begin(), halo.end(), s.halo_nodes.begin(), s.halo_nodes.end()))
      fail(k, "halo_nodes.npy: " + std::to_string(s.halo_nodes.size()) + " nodes, the shard's edges reach " + std::to_string(halo.size()) + " remote nodes");
    for (std::size_t i = 0; i < s.halo_owner.size() && i < s.halo_nodes.size(); ++i)
      if (s.halo_owner[i] != info.book.owner(s.halo_nodes[i])) {
        fail(k, "halo_owner.npy: element " + std::to_string(i) + " names part " + std::to_string(s.halo_owner[i]) + ", the book says " +
                    std::to_string(info.book.owner(s.halo_nodes[i])));
        break;
      }
  }
  // Splits: the union over shards, mapped back, equals the dataset's; each shard lists only its own nodes.
  for (auto [name, member, source] : {std::tuple{"train_idx", &Shard::train_idx, &ds.train_idx}, std::tuple{"val_idx", &Shard::val_idx, &ds.val_idx},
                                      std::tuple{"test_idx", &Shard::test_idx, &ds.test_idx}}) {
    std::vector<NodeId> all;
    for (const Shard& s : shards)
      for (NodeId g : (s.*member).span()) {
        if (g < info.book.begin(s.part) || g >= info.book.end(s.part)) {
          fail(s.part, std::string(name) + ".npy: node " + std::to_string(g) + " is not owned by this part");
          continue;
        }
        all.push_back(old_of_new[g]);
      }
    std::sort(all.begin(), all.end());
    std::vector<NodeId> want(source->begin(), source->end());
    std::sort(want.begin(), want.end());
    if (all != want) err.push_back(partition_dir + ": the shards' " + name + " differ from the dataset's (" + std::to_string(all.size()) + " vs " + std::to_string(want.size()) + " nodes)");
  }
  return res;
}

}  // namespace shardgnn
