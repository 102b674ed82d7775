#include "partition/shard_loader.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <vector>

#include "datasets/array_dir.hpp"
#include "datasets/checks.hpp"
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {

// Part k's entry in partition.json, or an InputError naming the parts there are.
const PartEntry& part_entry(const PartitionInfo& info, PartId k) {
  if (k < 0 || k >= info.book.parts())
    throw InputError(info.json_path(), "", "part " + std::to_string(k) + " requested, the dataset has parts 0.." + std::to_string(info.book.parts() - 1));
  return info.parts[static_cast<std::size_t>(k)];
}

// What every loaded shard has: its place in the book, its CSR, original ids, features and labels.
Shard load_rows(const PartitionInfo& info, PartId k) {
  const PartEntry& e = part_entry(info, k);
  const std::string path = info.json_path();
  const std::int64_t n = info.book.size(k);
  Shard s;
  s.dir = info.dir;
  s.part = k;
  s.book = info.book;
  copy_described(s, info.dataset);
  s.graph = load_listed_csr(e.path, e.arrays, path, n, e.edges);
  s.orig_ids = load_listed_ints(e.path, e.arrays, path, "orig_ids", {n}, true);
  if (info.dataset.schema.relation_ids()) s.edge_relations = load_listed_ints(e.path, e.arrays, path, "edge_relations", {e.edges}, true);
  if (info.dataset.feature_dim > 0 && s.feature_dtype == FeatureDtype::kFloat32)
    s.features = load_listed_array<float>(e.path, e.arrays, path, "features", {n, info.dataset.feature_dim}, true);
  else if (info.dataset.feature_dim > 0)
    s.features16 = load_listed_array<std::uint16_t>(e.path, e.arrays, path, "features", {n, info.dataset.feature_dim}, true, feature_npy_dtype(s.feature_dtype));
  if (info.dataset.num_classes > 0 && !info.dataset.multilabel) s.labels = load_listed_ints(e.path, e.arrays, path, "labels", {n}, true);
  if (info.dataset.num_classes > 0 && info.dataset.multilabel)
    s.label_bits = load_listed_array<std::uint8_t>(e.path, e.arrays, path, "label_bits", {n, label_row_bytes(info.dataset.num_classes)}, true);
  s.type_nodes = e.type_nodes;
  for (std::size_t t = 0; t < e.type_nodes.size(); ++t) {
    const NodeType& nt = info.dataset.schema.types()[t];
    if (info.dataset.feature_dtype == FeatureDtype::kFloat32)
      s.type_features.push_back(nt.feature_dim == 0 ? Array<float>()
                                                    : load_listed_array<float>(e.path, e.arrays, path, "features_" + nt.name, {e.type_nodes[t], nt.feature_dim}, true));
    else
      s.type_features16.push_back(nt.feature_dim == 0 ? Array<std::uint16_t>()
                                                      : load_listed_array<std::uint16_t>(e.path, e.arrays, path, "features_" + nt.name, {e.type_nodes[t], nt.feature_dim},
                                                                                         true, feature_npy_dtype(info.dataset.feature_dtype)));
  }
  return s;
}

// The rest of a shard's files, and the checks of what the sampler and trainer index with, made
// once here rather than on every access (a node-local peer's rows, load_shard_rows, were checked
// by the rank that owns them).
void load_rest(const PartitionInfo& info, PartId k, Shard& s) {
  const PartEntry& e = info.parts[static_cast<std::size_t>(k)];
  const std::string path = info.json_path();
  const std::string& pdir = e.path;
  const auto& arrays = e.arrays;
  for (auto [name, split] : {std::pair{"train_idx", &s.train_idx}, {"val_idx", &s.val_idx}, {"test_idx", &s.test_idx}})
    *split = load_listed_ints(pdir, arrays, path, name, {listed_length(arrays, path, name)}, true);
  const std::int64_t h = listed_length(arrays, path, "halo_nodes");
  s.halo_nodes = load_listed_ints(pdir, arrays, path, "halo_nodes", {h}, true);
  s.halo_owner = load_listed_array<PartId>(pdir, arrays, path, "halo_owner", {h}, true);
  s.edge_weights = load_listed_array<std::int64_t>(pdir, arrays, path, "edge_weights", {s.graph.num_edges()}, false);
  for_each_held_out(s, [&](const char* name, Array<NodeId>& rows, std::int64_t cols, const Array<NodeId>& lead, bool) {
    // Ranking destinations come one row per positive, loaded before them.
    const std::int64_t n_rows = &lead == &rows ? listed_length(arrays, path, name, 2) : static_cast<std::int64_t>(lead.size()) / 2;
    rows = load_listed_array<NodeId>(pdir, arrays, path, name, {n_rows, cols}, true);
  });
  auto file = [&](const char* name) { return (fs::path(pdir) / (std::string(name) + ".npy")).string(); };
  check_csr(s.graph, info.dataset.num_nodes, file("indptr"), file("indices"));
  if (info.dataset.schema.relation_ids())
    check_relation_order(s.graph, static_cast<std::int64_t>(info.dataset.schema.relations().size()), s.edge_relations, file("edge_relations"), file("indices"));
  check_range(s.orig_ids, 0, info.dataset.num_nodes, file("orig_ids"), "dataset node id");
  // A typed part's runs: the i-th node of type t's run is a dataset node of type t.
  for (std::size_t t = 0, i = 0; t < s.type_nodes.size(); ++t)
    for (const std::size_t end = i + static_cast<std::size_t>(s.type_nodes[t]); i < end; ++i)
      if (const NodeId v = s.orig_ids[i]; v < info.dataset.schema.begin(static_cast<int>(t)) || v >= info.dataset.schema.end(static_cast<int>(t)))
        throw InputError(file("orig_ids"), "element " + std::to_string(i),
                         "dataset node " + std::to_string(v) + " in the run of node type '" + info.dataset.schema.types()[t].name + "', which is not its type");
  if (info.dataset.num_classes > 0 && !info.dataset.multilabel) check_range(s.labels, -1, info.dataset.num_classes, file("labels"), "label");
  if (info.dataset.multilabel) check_label_bits(s.label_bits.span(), info.dataset.num_classes, file("label_bits"));
  for (auto [name, ids] : {std::pair{"train_idx", &s.train_idx}, {"val_idx", &s.val_idx}, {"test_idx", &s.test_idx}})
    check_range(*ids, info.book.begin(k), info.book.end(k), file(name), "node id of this part's");
  for_each_held_out(s, [&](const char* name, const Array<NodeId>& rows, std::int64_t cols, const Array<NodeId>& lead, bool) {
    check_range(rows.span(), 0, info.dataset.num_nodes, file(name), "node id");
    if (&lead != &rows) return;
    for (std::size_t i = 0; i < rows.size(); i += static_cast<std::size_t>(cols))
      if (rows[i] < info.book.begin(k) || rows[i] >= info.book.end(k))
        throw InputError(file(name), "element " + std::to_string(i), "node " + std::to_string(rows[i]) + " is not this part's: a row belongs to the part of its first node");
  });
  check_range(s.halo_nodes, 0, info.dataset.num_nodes, file("halo_nodes"), "node id");
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
}

// The parts one rank serves, loaded, and where their files are.
struct Group {
  const PartitionInfo& info;
  PartId first;
  std::vector<Shard> shards;
  std::string scratch;  // the folder for spill files
};

// One array (`name` in the parts' listings) of every shard of a group, end to end: the parts' own
// file pages mapped side by side where the writer laid the files out for it (map_end_to_end), so
// that nothing is copied and the page cache holds each page once; else (a partition written
// before that, an array the writer does not place) copied into a spill file in the scratch
// folder, page cache the kernel can drop and read back, as the parts' own files are.
template <class T, class Member>
Array<T> concatenated(const Group& g, Member member, const std::string& name) {
  std::size_t total = 0;
  std::vector<FilePiece> pieces;
  for (std::size_t i = 0; i < g.shards.size(); ++i) {
    const Array<T>& a = std::invoke(member, g.shards[i]);
    total += a.size();
    if (a.empty()) continue;
    const PartEntry& e = g.info.parts[static_cast<std::size_t>(g.first) + i];
    const std::string path = listed_file(e.path, e.arrays, g.info.json_path(), name);
    pieces.push_back({path, read_npy_header(path).data_offset, a.size() * sizeof(T)});
  }
  if (total == 0) return {};
  if (auto m = map_end_to_end(pieces)) return Array<T>(m->keeper, reinterpret_cast<const T*>(m->bytes.data()), total);
  SpillFile spill(g.scratch);
  for (const Shard& s : g.shards) {
    const Array<T>& a = std::invoke(member, s);
    spill.append(a.data(), a.size() * sizeof(T));
    a.release_pages();
  }
  MappedFile f = spill.map();
  return Array<T>(f.keeper, reinterpret_cast<const T*>(f.bytes.data()), total);
}

// concatenated for an array held at its stored width, which every part must share.
IntArray concatenated_ints(const Group& g, IntArray Shard::*member, const std::string& name) {
  return (g.shards.front().*member).visit([&](auto first) {
    using T = typename decltype(first)::value_type;
    for (const Shard& s : g.shards)
      if ((s.*member).get_if<T>() == nullptr)
        throw InputError(g.info.dir, "", "its parts store " + name + " at different widths; partition the dataset again");
    return IntArray(concatenated<T>(g, [&](const Shard& s) -> const Array<T>& { return *(s.*member).get_if<T>(); }, name));
  });
}

// The group's CSR end to end: row starts continue from the previous part's entries, written in
// blocks rather than held whole (O(nodes), where the ids are O(edges) and join without a copy).
CsrGraph concatenated_graph(const Group& g) {
  SpillFile spill(g.scratch);
  std::vector<EdgeId> block;
  EdgeId base = 0;
  block.push_back(0);
  for (const Shard& s : g.shards) {
    const auto indptr = s.graph.indptr().span();
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
  const auto narrow = static_cast<std::size_t>(std::count_if(g.shards.begin(), g.shards.end(), [](const Shard& s) { return s.graph.narrow_ids(); }));
  if (narrow == g.shards.size())
    return CsrGraph(std::move(indptr), concatenated<std::int32_t>(g, [](const Shard& s) -> const Array<std::int32_t>& { return s.graph.narrow_indices(); }, "indices"));
  if (narrow > 0) throw InputError(g.info.dir, "", "its parts store neighbour ids at different widths (int32 and int64); partition the dataset again");
  return CsrGraph(std::move(indptr), concatenated<NodeId>(g, [](const Shard& s) -> const Array<NodeId>& { return s.graph.wide_indices(); }, "indices"));
}

// The contiguous parts of `g` as one shard, part `rank` of `book`. Ids stay global and each
// part's range follows the one before, so rows, ids and splits join end to end; only the halo is
// recomputed (neighbours now owned here leave it).
Shard merged(const Group& g, int rank, PartitionBook book) {
  Shard s;
  s.part = rank;
  s.book = std::move(book);
  s.graph = concatenated_graph(g);
  s.feature_dtype = g.shards.front().feature_dtype;
  s.features = concatenated<float>(g, &Shard::features, "features");
  s.features16 = concatenated<std::uint16_t>(g, &Shard::features16, "features");
  s.labels = concatenated_ints(g, &Shard::labels, "labels");
  s.label_bits = concatenated<std::uint8_t>(g, &Shard::label_bits, "label_bits");
  s.orig_ids = concatenated_ints(g, &Shard::orig_ids, "orig_ids");
  s.train_idx = concatenated_ints(g, &Shard::train_idx, "train_idx");
  s.val_idx = concatenated_ints(g, &Shard::val_idx, "val_idx");
  s.test_idx = concatenated_ints(g, &Shard::test_idx, "test_idx");
  s.edge_weights = concatenated<std::int64_t>(g, &Shard::edge_weights, "edge_weights");
  s.edge_relations = concatenated_ints(g, &Shard::edge_relations, "edge_relations");
  // A typed graph's rows per type end to end: type t's rows of the rank's parts are contiguous in
  // type t's own numbering (part k's run after the runs of the parts before it, TypedFeatureStore),
  // while in the shard's node order they stay one run per part and type.
  const Shard& head = g.shards.front();
  s.schema = head.schema;
  s.type_nodes.assign(head.type_nodes.size(), 0);
  for (const Shard& part : g.shards)
    for (std::size_t t = 0; t < part.type_nodes.size(); ++t) s.type_nodes[t] += part.type_nodes[t];
  for (std::size_t t = 0; t < head.type_features.size(); ++t)
    s.type_features.push_back(concatenated<float>(g, [t](const Shard& x) -> const Array<float>& { return x.type_features[t]; }, "features_" + s.schema.types()[t].name));
  for (std::size_t t = 0; t < head.type_features16.size(); ++t)
    s.type_features16.push_back(
        concatenated<std::uint16_t>(g, [t](const Shard& x) -> const Array<std::uint16_t>& { return x.type_features16[t]; }, "features_" + s.schema.types()[t].name));
  for (auto [member, name] : {std::pair{&Shard::val_pos, "val_pos_edges"}, {&Shard::val_neg, "val_neg_edges"}, {&Shard::test_pos, "test_pos_edges"},
                              {&Shard::test_neg, "test_neg_edges"}, {&Shard::val_neg_dst, "val_neg_dst"}, {&Shard::test_neg_dst, "test_neg_dst"}})
    s.*member = concatenated<NodeId>(g, member, name);
  const NodeId begin = s.book.begin(rank), end = s.book.end(rank);
  std::vector<NodeId> halo;
  for (const Shard& part : g.shards)
    for (const NodeId v : part.halo_nodes)
      if (v < begin || v >= end) halo.push_back(v);
  std::sort(halo.begin(), halo.end());
  halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
  std::vector<PartId> owner(halo.size());
  for (std::size_t i = 0; i < halo.size(); ++i) owner[i] = s.book.owner(halo[i]);
  s.halo_nodes = IntArray(Array<NodeId>(std::move(halo)));
  s.halo_owner = Array<PartId>(std::move(owner));
  return s;
}


}  // namespace

Shard load_shard(std::shared_ptr<const PartitionInfo> info, PartId k) {
  Shard s = load_rows(*info, k);
  load_rest(*info, k, s);
  s.info = std::move(info);
  return s;
}

Shard load_shard(const PartitionInfo& info, PartId k) { return load_shard(std::make_shared<const PartitionInfo>(info), k); }

Shard load_shard_rows(const PartitionInfo& info, PartId k) { return load_rows(info, k); }

Array<std::uint8_t> load_part_label_bits(const PartitionInfo& info, PartId k) {
  const PartEntry& e = part_entry(info, k);
  auto bits = load_listed_array<std::uint8_t>(e.path, e.arrays, info.json_path(), "label_bits", {info.book.size(k), label_row_bytes(info.dataset.num_classes)}, true);
  check_label_bits(bits.span(), info.dataset.num_classes, (fs::path(e.path) / "label_bits.npy").string());
  return bits;
}

std::pair<PartId, PartId> parts_of_rank(int parts, int rank, int ranks) {
  return {static_cast<PartId>(std::int64_t{parts} * rank / ranks), static_cast<PartId>(std::int64_t{parts} * (rank + 1) / ranks)};
}

Shard load_shard_for_rank(const PartitionInfo& info, int rank, int ranks, const std::string& scratch) {
  const int parts = info.book.parts();
  if (parts < ranks)
    throw InputError(info.dir + ": " + std::to_string(parts) + " parts, but the job has " + std::to_string(ranks) +
                     " ranks (run with mpiexec -n " + std::to_string(parts) + " or fewer: a rank serves one part or more, never less)");
  auto shared = std::make_shared<const PartitionInfo>(info);
  if (parts == ranks) {
    verify_shard_checksums(info, rank);
    return load_shard(std::move(shared), rank);
  }
  // Several parts per rank: the contiguous parts [first, last) become one shard of a book with a
  // part per rank.
  const auto [first, last] = parts_of_rank(parts, rank, ranks);
  Group group{info, first, {}, scratch.empty() ? fs::temp_directory_path().string() : scratch};
  {
    // The parts' own mappings go once they are mapped again end to end: those get the 2 MiB pages.
    const HugePageHintsOff off;
    for (PartId k = first; k < last; ++k) {
      verify_shard_checksums(info, k);
      group.shards.push_back(load_shard(shared, k));
    }
  }
  std::vector<NodeId> offsets;
  for (int r = 0; r <= ranks; ++r) offsets.push_back(info.book.begin(parts_of_rank(parts, r, ranks).first));
  Shard s = merged(group, rank, PartitionBook(std::move(offsets)));
  s.dir = info.dir;
  s.merged_parts = last - first;
  copy_described(s, info.dataset);
  s.info = std::move(shared);
  return s;
}

Shard shard_from_dataset(const Dataset& ds) {
  Shard s;
  s.part = 0;
  s.book = PartitionBook({0, ds.num_nodes()});
  s.graph = ds.graph.narrow_ids() ? CsrGraph(view_of(ds.graph.indptr()), view_of(ds.graph.narrow_indices()))
                                  : CsrGraph(view_of(ds.graph.indptr()), view_of(ds.graph.wide_indices()));
  share_part<FeatureTable>(s, ds);
  share_part<NodeLabels>(s, ds);
  share_part<HeldOutEdges>(s, ds);
  share_part<TypedRows>(s, ds);
  for (const NodeType& t : ds.schema.types()) s.type_nodes.push_back(t.count);
  s.train_idx = view_of(ds.train_idx);
  s.val_idx = view_of(ds.val_idx);
  s.test_idx = view_of(ds.test_idx);
  std::vector<NodeId> ids(static_cast<std::size_t>(ds.num_nodes()));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<NodeId>(i);
  s.orig_ids = IntArray(Array<NodeId>(std::move(ids)));
  share_part<EdgeArrays>(s, ds);
  return s;
}

void verify_shard_checksums(const PartitionInfo& info, PartId k) {
  const std::string path = info.json_path();
  if (k < 0 || k >= info.book.parts()) throw InputError(path, "", "no part " + std::to_string(k));
  const PartEntry& e = info.parts[static_cast<std::size_t>(k)];
  std::vector<std::string> errors;
  verify_listed_checksums(e.path, e.arrays, path, errors);
  if (!errors.empty()) throw InputError(errors.front());
}

}  // namespace shardgnn
