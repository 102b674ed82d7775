#include "partition/shard_writer.hpp"

#include <algorithm>
#include <bit>
#include <filesystem>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "datasets/array_dir.hpp"
#include "datasets/feature_rows.hpp"
#include "datasets/fileio.hpp"
#include "datasets/json_util.hpp"
#include "partition/parallel.hpp"
#include "partition/partition_info.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;

namespace shardgnn {

namespace {

std::string part_dir_name(PartId k) { return "part-" + std::to_string(k); }

// Node ids of `split` owned by part k, as sorted new ids.
std::vector<NodeId> split_of_part(const IntArray& split, const Relabelling& r, PartId k) {
  std::vector<NodeId> out;
  for (const NodeId v : split) {
    const NodeId g = r.new_of_old[v];
    if (g >= r.book.begin(k) && g < r.book.end(k)) out.push_back(g);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The rows (of `cols` ids) of a held-out array whose lead row's first node part k owns, every id
// relabelled (see for_each_held_out).
std::vector<NodeId> held_out_of_part(const Array<NodeId>& rows, std::int64_t cols, const Array<NodeId>& lead, const Relabelling& r, PartId k) {
  std::vector<NodeId> out;
  const auto c = static_cast<std::size_t>(cols);
  for (std::size_t i = 0; i < rows.size() / c; ++i) {
    const NodeId first = r.new_of_old[lead[2 * i]];
    if (first < r.book.begin(k) || first >= r.book.end(k)) continue;
    for (std::size_t j = 0; j < c; ++j) out.push_back(r.new_of_old[rows[i * c + j]]);
  }
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
// A row of a graph with relation ids is one sorted run per relation (GraphSchema): each run is
// relabelled and sorted in its place, so the row's relation ids stay as the dataset's.
template <class Id>
class RowRelabeller {
 public:
  RowRelabeller(const Id* new_of_old, const PartitionBook& book, int id_bits)
      : new_of_old_(new_of_old), book_(book), parts_(book.parts()), start_(static_cast<std::size_t>(parts_) + 1), id_bits_(id_bits),
        id_mask_(id_bits > 0 ? static_cast<Id>((Id{1} << id_bits) - 1) : static_cast<Id>(~Id{0})) {}

  // Writes the row of node `u`, `nb` (edge weights `w`, or null), relabelled and sorted into
  // `out` (`w_out`), sets the bit of every new id it reaches in `reached`, and adds the row to
  // the shard's metrics in `tally`. `run_ends` (empty: the row is one run) ends each relation's
  // run of a row with relation ids; each run is sorted on its own.
  template <class In>
  void operator()(NodeId u, std::span<const In> nb, const std::int64_t* w, NodeId* out, std::int64_t* w_out, std::uint64_t* reached,
                  RowTally& tally, std::span<const std::size_t> run_ends = {}) {
    const std::size_t d = nb.size();
    const Id* new_of_old = new_of_old_;
    tally.begin_row(u);
    if (!run_ends.empty() || d < kCountingFrom || d < static_cast<std::size_t>(parts_)) {
      for (std::size_t j = 0; j < d; ++j) {
        const Id t = new_of_old[nb[j]];
        const NodeId g = static_cast<NodeId>(t & id_mask_);
        out[j] = g;
        reached[g >> 6] |= std::uint64_t{1} << (g & 63);
        tally.entry(nb[j], owner_of(t, g));
      }
      tally.end_row();
      if (w) std::copy_n(w, d, w_out);
      if (run_ends.empty()) return sort_row(out, w_out, d);
      for (std::size_t a = 0; const std::size_t b : run_ends) {
        sort_row(out + a, w_out ? w_out + a : nullptr, b - a);
        a = b;
      }
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
  template <class In>
  void prefetch(std::span<const In> nb) const noexcept {
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
  std::vector<std::int32_t> narrow_ids;  // a chunk of `ids` as a narrow shard stores them
  std::vector<std::int64_t> weights;
  std::vector<std::size_t> run_ends;  // a row's relation runs (RowRelabeller)
  FeatureRowScratch features;
};

// The table the rows' new-id lookups go through: a 32-bit copy of new_of_old where the ids fit,
// with each node's part in the high bits where those fit too (see RowRelabeller). Empty (for a
// non-empty graph): the 64-bit new_of_old itself.
struct NarrowIds {
  std::vector<std::uint32_t> table;
  int id_bits = 0;  // > 0: the entries carry the part above this many id bits
};

NarrowIds narrow_ids(const Dataset& ds, std::span<const PartId> assignment, int K, const Relabelling& r, const WriteOptions& options) {
  NarrowIds n;
  if (ds.num_nodes() > (NodeId{1} << 32) || !options.narrow_ids) return n;
  const int need_id = std::max(1, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(std::max<NodeId>(ds.num_nodes(), 1) - 1))));
  const int need_part = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(std::max(K, 1) - 1)));
  if (need_part > 0 && need_id + need_part <= 32 && options.pack_parts) n.id_bits = need_id;
  n.table.resize(r.new_of_old.size());  // == ds.num_nodes() == assignment.size()
  for (std::size_t v = 0; v < n.table.size(); ++v)
    n.table[v] = static_cast<std::uint32_t>(r.new_of_old[v]) | (n.id_bits > 0 ? static_cast<std::uint32_t>(assignment[v]) << n.id_bits : 0u);
  return n;
}

// One write_partitioned call, step by step: the relabelling and lookup table every part's
// writing shares, and what each part's writing leaves for partition.json (its entry and tally).
class ShardWriter {
 public:
  ShardWriter(const Dataset& ds, const std::string& dataset_dir, const PartitionResult& result, const WriteOptions& options)
      : ds_(ds), dataset_dir_(dataset_dir), result_(result), K_(result.config.parts), r_(relabel(result.assignment, K_)),
        narrow_(narrow_ids(ds, result.assignment, K_, r_, options)), feature_dtype_(options.feature_dtype), edges_before_(static_cast<std::size_t>(K_) + 1, 0),
        tallies_(static_cast<std::size_t>(K_)), entries_(static_cast<std::size_t>(K_)) {
    for (NodeId v = 0; v < ds.num_nodes(); ++v) edges_before_[static_cast<std::size_t>(result.assignment[static_cast<std::size_t>(v)]) + 1] += ds.graph.degree(v);
    std::partial_sum(edges_before_.begin(), edges_before_.end(), edges_before_.begin());
    const std::string meta_path = (fs::path(dataset_dir) / "meta.json").string();
    meta_crc_ = fs::exists(meta_path) ? hex32(crc32_of_file(meta_path)) : "";
  }

  int parts() const noexcept { return K_; }

  // Writes the parts listed in `mine` under `tmp`, one worker per core, each taking the next part.
  // Nothing may escape a worker (it would leave the temporary folder behind): a worker's failure
  // is rethrown here.
  void write_parts(const std::string& tmp, const std::vector<PartId>& mine) {
    auto write_all = [&](const auto* new_of_old) {
      using Id = std::remove_cv_t<std::remove_pointer_t<decltype(new_of_old)>>;
      const int id_bits = std::is_same_v<Id, std::uint32_t> ? narrow_.id_bits : 0;
      for_each_part_parallel(
          static_cast<int>(mine.size()), [&] { return WriterScratch<Id>(new_of_old, r_.book, ds_.num_nodes(), id_bits); },
          [&](int i, WriterScratch<Id>& scratch) {
            const PartId k = mine[static_cast<std::size_t>(i)];
            entries_[static_cast<std::size_t>(k)] = write_part(tmp, k, scratch);
          });
    };
    if (!narrow_.table.empty() || ds_.num_nodes() == 0) write_all(narrow_.table.data());
    else write_all(r_.new_of_old.data());
  }

  // partition.json under `tmp`, from every part's entry and tally; returns the metrics it holds.
  PartitionMetrics write_root(const std::string& tmp) {
    PartitionInfo info;
    info.dataset = meta_of(ds_);
    info.dataset.full = false;
    info.dataset.feature_dtype = feature_dtype_;
    info.dataset_dir = fs::absolute(dataset_dir_).lexically_normal().string();
    info.meta_crc32 = meta_crc_;
    info.method = method_name(result_.config.method);
    info.parameters = result_.config;
    info.partition_seconds = result_.seconds;
    info.book = r_.book;
    info.metrics = metrics_from_tallies(ds_, result_.assignment, result_.config, tallies_);
    info.parts = std::move(entries_);
    write_json_file((fs::path(tmp) / "partition.json").string(), json::value_from(info));
    return std::move(info.metrics);
  }

  // The entries of the parts in `mine` as lines of JSON (serialize escapes newlines), in order:
  // what a rank sends rank 0 when the ranks share the parts.
  std::string entry_lines(const std::vector<PartId>& mine) const {
    std::string lines;
    for (const PartId k : mine) lines += json::serialize(json::value_from(entries_[static_cast<std::size_t>(k)])) + "\n";
    return lines;
  }

  // On rank 0, every rank's entry_lines and tallies, gathered rank after rank (each rank's
  // tallies are all K, its own parts filled in).
  void take_gathered(const std::vector<char>& all_lines, const std::vector<ShardTally>& all_tallies, int ranks) {
    std::size_t at = 0;
    for (int from = 0; from < ranks; ++from)
      for (PartId k = from; k < K_; k += ranks) {
        const auto end = static_cast<std::size_t>(std::find(all_lines.begin() + static_cast<std::ptrdiff_t>(at), all_lines.end(), '\n') - all_lines.begin());
        entries_[static_cast<std::size_t>(k)] = json::value_to<PartEntry>(json::parse(std::string_view(all_lines.data() + at, end - at)));
        at = end + 1;
      }
    for (PartId k = 0; k < K_; ++k)
      tallies_[static_cast<std::size_t>(k)] = all_tallies[static_cast<std::size_t>(k % ranks) * static_cast<std::size_t>(K_) + static_cast<std::size_t>(k)];
  }

  const std::vector<ShardTally>& tallies() const noexcept { return tallies_; }

 private:
  template <class Id>
  PartEntry write_part(const std::string& tmp, PartId k, WriterScratch<Id>& scratch);
  template <class Id>
  json::object write_rows(const std::string& pdir, PartId k, const std::vector<EdgeId>& indptr, WriterScratch<Id>& scratch, RowTally& tally,
                          json::object& arrays) const;
  std::vector<NodeId> take_halo(PartId k, std::vector<std::uint64_t>& reached) const;
  void relation_runs(NodeId u, std::vector<std::size_t>& ends) const;
  // Where part k's array of `row_bytes` a node (a_node) or an edge (a_node false) places its data
  // (npy_header's data_at): after the same array of the parts before it, so that a rank serving
  // several parts maps theirs end to end instead of copying them. Counted from 128, numpy's own
  // header length for these arrays, so that part 0's files are as numpy writes them.
  std::int64_t at(PartId k, std::int64_t row_bytes, bool a_node = true) const {
    return 128 + (a_node ? r_.book.begin(k) : edges_before_[static_cast<std::size_t>(k)]) * row_bytes;
  }
  template <class Id>
  void write_features(const std::string& pdir, PartId k, const std::vector<NodeId>& orig, WriterScratch<Id>& scratch, json::object& arrays) const;
  void write_typed(const std::string& pdir, const std::vector<NodeId>& orig, const std::vector<NodeId>& halo, json::object& arrays,
                   std::vector<std::int64_t>& type_nodes, std::vector<std::int64_t>& type_halo) const;

  const Dataset& ds_;
  const std::string& dataset_dir_;
  const PartitionResult& result_;
  int K_;
  Relabelling r_;
  NarrowIds narrow_;
  FeatureDtype feature_dtype_;
  // Entries of the CSR in the parts before each part (K + 1 of them), for at().
  std::vector<EdgeId> edges_before_;
  std::string meta_crc_;
  // Each shard's share of the metrics, counted in the pass over its rows: a separate walk of the
  // graph was a large share of the `partition` command.
  std::vector<ShardTally> tallies_;
  std::vector<PartEntry> entries_;
};

// One shard's arrays, written under `tmp` with a worker's scratch; returns its entry.
template <class Id>
PartEntry ShardWriter::write_part(const std::string& tmp, PartId k, WriterScratch<Id>& scratch) {
  const std::string pdir = (fs::path(tmp) / part_dir_name(k)).string();
  fs::create_directory(pdir);
  const NodeId first = r_.book.begin(k), count = r_.book.size(k);
  std::vector<EdgeId> indptr(static_cast<std::size_t>(count) + 1, 0);
  for (NodeId i = 0; i < count; ++i) indptr[i + 1] = indptr[i] + ds_.graph.degree(r_.old_of_new[first + i]);
  RowTally tally(ds_, k, K_);
  json::object arrays;
  json::object weights_entry = write_rows(pdir, k, indptr, scratch, tally, arrays);
  const std::vector<NodeId> halo = take_halo(k, scratch.reached);
  tally.tally.halo = static_cast<std::int64_t>(halo.size());
  tallies_[static_cast<std::size_t>(k)] = tally.tally;
  std::vector<PartId> halo_owner(halo.size());
  for (std::size_t i = 0; i < halo.size(); ++i) halo_owner[i] = r_.book.owner(halo[i]);
  const std::vector<NodeId> orig(r_.old_of_new.begin() + first, r_.old_of_new.begin() + first + count);

  if (ds_.feature_dim > 0) write_features(pdir, k, orig, scratch, arrays);
  std::vector<std::int64_t> type_nodes, type_halo;
  if (ds_.schema.typed()) write_typed(pdir, orig, halo, arrays, type_nodes, type_halo);
  if (ds_.num_classes > 0 && ds_.multilabel) {
    const auto row = static_cast<std::size_t>(label_row_bytes(ds_.num_classes));
    std::vector<std::uint8_t> bits(static_cast<std::size_t>(count) * row);
    for (NodeId i = 0; i < count; ++i) std::copy_n(ds_.label_bits.data() + static_cast<std::size_t>(orig[i]) * row, row, bits.data() + static_cast<std::size_t>(i) * row);
    arrays["label_bits"] = write_listed_array(pdir, "label_bits", DType::kUInt8, bits.data(), {count, static_cast<std::int64_t>(row)}, at(k, static_cast<std::int64_t>(row)));
  } else if (ds_.num_classes > 0) {
    std::vector<std::int64_t> labels(static_cast<std::size_t>(count));
    for (NodeId i = 0; i < count; ++i) labels[i] = ds_.labels[static_cast<std::size_t>(orig[i])];
    const DType as = label_dtype(ds_.num_classes);
    arrays["labels"] = write_listed_ints(pdir, "labels", Array<std::int64_t>(std::move(labels)), as, at(k, static_cast<std::int64_t>(dtype_size(as))));
  }
  // Split and halo ids are global ids: int32 where every id fits, as the neighbour ids.
  const DType id_as = ids_fit_int32(ds_.num_nodes()) ? DType::kInt32 : DType::kInt64;
  auto write_ids = [&](const char* name, const std::vector<NodeId>& ids) {
    arrays[name] = write_listed_ints(pdir, name, Array<NodeId>(nullptr, ids.data(), ids.size()), id_as);
  };
  write_ids("train_idx", split_of_part(ds_.train_idx, r_, k));
  write_ids("val_idx", split_of_part(ds_.val_idx, r_, k));
  write_ids("test_idx", split_of_part(ds_.test_idx, r_, k));
  for_each_held_out(ds_, [&](const char* name, const Array<NodeId>& rows, std::int64_t cols, const Array<NodeId>& lead, bool) {
    const auto mine = held_out_of_part(rows, cols, lead, r_, k);
    arrays[name] = write_listed_array(pdir, name, DType::kInt64, mine.data(), {static_cast<std::int64_t>(mine.size()) / cols, cols});
  });
  write_ids("halo_nodes", halo);
  arrays["halo_owner"] = write_listed_array(pdir, "halo_owner", halo_owner);
  arrays["orig_ids"] = write_listed_ints(pdir, "orig_ids", Array<NodeId>(nullptr, orig.data(), orig.size()), id_as, at(k, static_cast<std::int64_t>(dtype_size(id_as))));
  if (!ds_.edge_weights.empty()) arrays["edge_weights"] = std::move(weights_entry);
  // The shard's big arrays sit in the page cache as written, in folios no larger than the
  // writes. Dropped here (each file is fsynced), they are read back by the first job that maps
  // them, in the 2 MiB folios it asks for (map_file), and mapped with 2 MiB pages: the sampler's
  // random reads then miss the TLB less than in the writer's folios or in 4 KiB pages. (Larger
  // writes instead, 2 MiB through stdio, now and then made the kernel's copy into the page
  // cache much slower.)
  for (const auto& entry : fs::directory_iterator(pdir))
    if (entry.is_regular_file() && entry.file_size() >= (std::uintmax_t{2} << 20)) drop_page_cache(entry.path().string());
  PartEntry e;
  e.dir = part_dir_name(k);
  e.nodes = count;
  e.edges = indptr.back();
  e.halo = static_cast<std::int64_t>(halo.size());
  e.type_nodes = std::move(type_nodes);
  e.type_halo = std::move(type_halo);
  e.arrays = std::move(arrays);
  return e;
}

// A typed graph's part: its owned nodes and halo per type, and each featured type's rows as
// features_<type>.npy, [owned nodes of the type, the type's width], stored as --feature-dtype. `orig` (dataset ids)
// is ascending, so each type's nodes are one run of it.
void ShardWriter::write_typed(const std::string& pdir, const std::vector<NodeId>& orig, const std::vector<NodeId>& halo, json::object& arrays,
                              std::vector<std::int64_t>& type_nodes, std::vector<std::int64_t>& type_halo) const {
  const GraphSchema& s = ds_.schema;
  type_nodes.assign(static_cast<std::size_t>(s.num_types()), 0);
  type_halo.assign(static_cast<std::size_t>(s.num_types()), 0);
  for (const NodeId h : halo) ++type_halo[static_cast<std::size_t>(s.type_of(r_.old_of_new[static_cast<std::size_t>(h)]))];
  for (int t = 0; t < s.num_types(); ++t) {
    const auto first = std::lower_bound(orig.begin(), orig.end(), s.begin(t)), last = std::lower_bound(orig.begin(), orig.end(), s.end(t));
    const auto rows = static_cast<std::int64_t>(last - first);
    type_nodes[static_cast<std::size_t>(t)] = rows;
    const std::int64_t F = s.types()[static_cast<std::size_t>(t)].feature_dim;
    if (F == 0) continue;
    const std::string name = "features_" + s.types()[static_cast<std::size_t>(t)].name;
    const NodeId type_first = s.begin(t);
    arrays[name] = write_listed_array_streamed(pdir, name, feature_npy_dtype(feature_dtype_), {rows, F}, [&](const NpySink& out) {
      FeatureRowScratch scratch;
      write_type_rows(ds_, t, feature_dtype_, rows, [&](std::int64_t i) { return first[i] - type_first; }, scratch, out,
                      "partition --feature-dtype: " + s.types()[static_cast<std::size_t>(t)].name + " ");
    });
  }
}

// Writes part k's indptr and its rows relabelled (indices, and edge_weights when the dataset has
// them), marking in scratch.reached every id the rows reach and tallying them; returns the
// edge_weights entry, which the part's listing carries last.
template <class Id>
json::object ShardWriter::write_rows(const std::string& pdir, PartId k, const std::vector<EdgeId>& indptr, WriterScratch<Id>& scratch, RowTally& tally,
                                     json::object& arrays) const {
  const NodeId first = r_.book.begin(k), count = r_.book.size(k);
  const bool weighted = !ds_.edge_weights.empty();
  const bool related = ds_.schema.relation_ids();
  const EdgeId m = indptr.back();
  // The relabelled rows go out in chunks that stay in cache (a run of rows, or one longer row):
  // no shard-sized copy of the indices is built, faulted in and read again to be written.
  // Global ids are written 32 bits wide when every node's id fits.
  const bool narrow = ids_fit_int32(ds_.num_nodes());
  auto relabel_rows = [&](const auto& g, const NpySink& ids_out, const NpySink* weights_out) {
    for (NodeId i = 0; i < count;) {
      const EdgeId e0 = indptr[i];
      NodeId j = i + 1;
      while (j < count && indptr[j + 1] - e0 <= kWriteChunkEntries) ++j;
      const auto len = static_cast<std::size_t>(indptr[j] - e0);
      if (scratch.ids.size() < len) scratch.ids.resize(len);
      if (weighted && scratch.weights.size() < len) scratch.weights.resize(len);
      for (NodeId row = i; row < j; ++row) {
        if (row + kPrefetchRows < count) scratch.relabel.prefetch(g.neighbors(r_.old_of_new[first + row + kPrefetchRows]));
        const NodeId u = r_.old_of_new[first + row];
        const std::size_t at = static_cast<std::size_t>(indptr[row] - e0);
        if (related) relation_runs(u, scratch.run_ends);
        scratch.relabel(u, g.neighbors(u), weighted ? ds_.edge_weights.data() + ds_.graph.indptr()[u] : nullptr, scratch.ids.data() + at,
                        weighted ? scratch.weights.data() + at : nullptr, scratch.reached.data(), tally, scratch.run_ends);
      }
      sink_ids(ids_out, scratch.ids.data(), len, narrow, scratch.narrow_ids);
      if (weighted) (*weights_out)(scratch.weights.data(), len * sizeof(std::int64_t));
      i = j;
    }
  };
  json::object weights_entry;
  arrays["indptr"] = write_listed_array(pdir, "indptr", indptr);
  arrays["indices"] = write_listed_array_streamed(pdir, "indices", narrow ? DType::kInt32 : DType::kInt64, {m}, [&](const NpySink& ids_out) {
    ds_.graph.visit([&](const auto& g) {
      if (!weighted) return relabel_rows(g, ids_out, nullptr);
      weights_entry = write_listed_array_streamed(pdir, "edge_weights", dtype_of<std::int64_t>(), {m},
                                                  [&](const NpySink& weights_out) { relabel_rows(g, ids_out, &weights_out); }, at(k, sizeof(std::int64_t), false));
    });
  }, at(k, narrow ? sizeof(std::int32_t) : sizeof(std::int64_t), false));
  // Relation ids: each row's runs stayed in place, so its ids are the dataset row's as they are.
  if (related)
    ds_.edge_relations.visit([&](auto rel) {
      using T = typename decltype(rel)::value_type;
      arrays["edge_relations"] = write_listed_array_streamed(pdir, "edge_relations", dtype_of<T>(), {m}, [&](const NpySink& out) {
        for (NodeId i = 0; i < count; ++i) {
          const NodeId u = r_.old_of_new[first + i];
          const EdgeId b = ds_.graph.indptr()[u];
          out(rel.data() + b, static_cast<std::size_t>(ds_.graph.indptr()[u + 1] - b) * sizeof(T));
        }
      }, at(k, sizeof(T), false));
    });
  return weights_entry;
}

// Where each relation's run of dataset row u ends (positions in the row), into `ends`.
void ShardWriter::relation_runs(NodeId u, std::vector<std::size_t>& ends) const {
  ends.clear();
  const EdgeId b = ds_.graph.indptr()[u], e = ds_.graph.indptr()[u + 1];
  ds_.edge_relations.visit([&](auto rel) {
    for (EdgeId i = b + 1; i < e; ++i)
      if (rel[static_cast<std::size_t>(i)] != rel[static_cast<std::size_t>(i - 1)]) ends.push_back(static_cast<std::size_t>(i - b));
  });
  ends.push_back(static_cast<std::size_t>(e - b));
}

// Part k's halo, sorted: the ids outside the part that its rows marked in `reached`, which is all
// zeros again afterwards. The bitmap (a bit per node) stays in cache where a stamp per node did
// not; a pass over n bits per part costs less than the part's rows unless K is large against the
// mean degree.
std::vector<NodeId> ShardWriter::take_halo(PartId k, std::vector<std::uint64_t>& reached) const {
  const NodeId first = r_.book.begin(k), end = r_.book.end(k);
  std::vector<NodeId> halo;
  for (std::size_t wi = 0; wi < reached.size(); ++wi) {
    for (std::uint64_t bits = reached[wi]; bits != 0; bits &= bits - 1) {
      const NodeId v = static_cast<NodeId>(wi * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
      if (v < first || v >= end) halo.push_back(v);
    }
    reached[wi] = 0;
  }
  return halo;
}

// The features of the part's nodes (`orig`, dataset ids), gathered into a cache-sized chunk at a
// time like the indices.
template <class Id>
void ShardWriter::write_features(const std::string& pdir, PartId k, const std::vector<NodeId>& orig, WriterScratch<Id>& scratch, json::object& arrays) const {
  const std::int64_t F = ds_.feature_dim;
  const auto count = static_cast<NodeId>(orig.size());
  const NodeId rows_per_chunk = std::max<NodeId>(1, static_cast<NodeId>(kWriteChunkEntries) / F);
  arrays["features"] = write_listed_array_streamed(pdir, "features", feature_npy_dtype(feature_dtype_), {count, F}, [&](const NpySink& out) {
    write_feature_rows(ds_, feature_dtype_, count, [&orig](NodeId i) { return orig[static_cast<std::size_t>(i)]; }, rows_per_chunk, scratch.features, out,
                       "partition --feature-dtype: dataset ");
  }, at(k, F * static_cast<std::int64_t>(feature_value_bytes(feature_dtype_))));
}

// Over ranks: rank 0 makes the temporary folder (on a filesystem every rank sees), every rank
// writes parts rank, rank + P, ..., rank 0 gathers their entries and tallies, writes
// partition.json and puts the folder in place. Any rank's failure is every rank's, and the
// temporary folder goes.
PartitionMetrics write_spread(ShardWriter& writer, const comm::Communicator& comm, const std::string& out_dir, bool overwrite) {
  const int rank = comm.rank(), ranks = comm.size();
  PartitionMetrics metrics;
  std::string tmp;
  agree(comm, [&] {
    if (rank == 0) tmp = begin_dir_atomic(out_dir, overwrite);
  });
  try {
    {
      std::vector<char> name(tmp.begin(), tmp.end());
      comm.broadcast_vector(name, 0);
      tmp.assign(name.begin(), name.end());
    }
    std::vector<PartId> mine;
    for (PartId k = rank; k < writer.parts(); k += ranks) mine.push_back(k);
    std::string lines;
    agree(comm, [&] {
      writer.write_parts(tmp, mine);
      lines = writer.entry_lines(mine);
    });
    const std::vector<char> all_lines = comm.allgatherv<char>(lines).data;
    const std::vector<ShardTally> all_tallies = comm.allgatherv<ShardTally>(writer.tallies()).data;
    agree(comm, [&] {
      if (rank != 0) return;
      writer.take_gathered(all_lines, all_tallies, ranks);
      metrics = writer.write_root(tmp);
      commit_dir_atomic(tmp, out_dir, overwrite);
    });
  } catch (...) {
    std::error_code ec;
    if (rank == 0) fs::remove_all(tmp, ec);
    throw;
  }
  return metrics;
}

}  // namespace

PartitionMetrics write_partitioned(const Dataset& ds, const std::string& dataset_dir, const PartitionResult& result, const std::string& out_dir,
                                   const WriteOptions& options) {
  ShardWriter writer(ds, dataset_dir, result, options);
  if (options.comm != nullptr && options.comm->size() > 1) return write_spread(writer, *options.comm, out_dir, options.overwrite);
  std::vector<PartId> all(static_cast<std::size_t>(writer.parts()));
  std::iota(all.begin(), all.end(), 0);
  PartitionMetrics metrics;
  write_dir_atomic(out_dir, options.overwrite, [&](const std::string& tmp) {
    writer.write_parts(tmp, all);
    metrics = writer.write_root(tmp);
  });
  return metrics;
}

}  // namespace shardgnn
