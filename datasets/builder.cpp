// COO -> CSR by a counting sort on the source, then a per-row sort that also resolves the
// cleaning options. Each entry carries a "reverse" flag in its low bit while rows are sorted so
// symmetrising can add exactly the reverse entries that are missing (multiplicities matched)
// without a second pass over the graph.
#include "datasets/builder.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>

#include <boost/sort/pdqsort/pdqsort.hpp>

#include "datasets/array_dir.hpp"
#include "datasets/error.hpp"
#include "datasets/npy.hpp"
#include "datasets/step_log.hpp"

namespace shardgnn {

namespace {

struct RowEntry {
  std::int64_t key;     // (relation << neighbour bits | neighbour) << 1 | is_reverse
  std::int64_t weight;
  // Weight breaks ties so the kept copy of a duplicate is deterministic.
  bool operator<(const RowEntry& o) const { return key != o.key ? key < o.key : weight < o.weight; }
};

// Turns one row's sorted entries into its neighbours as the cleaning options say, counting what
// changed: runs of equal neighbours are resolved (reverses added, duplicates dropped).
struct RowResolver {
  const CleanOptions& opt;
  CleanReport& rep;
  std::int64_t neighbour_mask = -1;  // the neighbour's bits of key >> 1 (the rest: its relation)
  bool saw_self_loop = false, saw_duplicate = false;

  template <class It, class Emit>
  void operator()(NodeId u, It first, It last, Emit&& emit) {
    for (auto it = first; it != last;) {
      const std::int64_t nb = key_of(*it) >> 1;
      auto run_end = it;
      std::int64_t originals = 0, reverses = 0;
      while (run_end != last && (key_of(*run_end) >> 1) == nb) {
        (key_of(*run_end) & 1 ? reverses : originals) += 1;
        ++run_end;
      }
      std::int64_t keep;
      if (opt.drop_duplicates) {
        keep = 1;
        if (originals == 0) rep.reverse_added += 1;
        else rep.duplicates_dropped += originals - 1;
      } else {
        // (u,v) k times and (v,u) j times: symmetric means both k' = max(k, j).
        keep = std::max(originals, reverses);
        rep.reverse_added += std::max<std::int64_t>(0, reverses - originals);
      }
      saw_self_loop |= (nb & neighbour_mask) == u;
      saw_duplicate |= keep > 1;
      // Originals sort before reverses of the same neighbour, so `it` is the first original when one exists.
      const std::int64_t w = weight_of(*it);
      for (std::int64_t k = 0; k < keep; ++k) emit(nb, w);
      it = run_end;
    }
  }

  static std::int64_t key_of(const RowEntry& e) { return e.key; }
  static std::int64_t weight_of(const RowEntry& e) { return e.weight; }
  // The external build's entries are bare keys: unweighted.
  static std::int64_t key_of(std::uint64_t key) { return static_cast<std::int64_t>(key); }
  static std::int64_t weight_of(std::uint64_t) { return 0; }
};

}  // namespace

bool is_symmetric(const CsrGraph& graph) {
  return graph.visit([](const auto& g) {
    for (NodeId u = 0; u < g.num_nodes(); ++u)
      for (const NodeId v : g.neighbors(u)) {
        if (v == u) continue;
        const auto back = g.neighbors(v);
        if (!std::binary_search(back.begin(), back.end(), u)) return false;
      }
    return true;
  });
}

BuiltGraph build_csr(EdgeList&& edges, const CleanOptions& opt) {
  const std::int64_t n = edges.num_nodes;
  const std::size_t m = edges.src.size();
  const bool weighted = !edges.weight.empty();
  const bool related = !edges.relation.empty();
  assert(edges.dst.size() == m && (!weighted || edges.weight.size() == m) && (!related || edges.relation.size() == m));
  BuiltGraph out;
  CleanReport& rep = out.report;
  rep.input_entries = static_cast<std::int64_t>(m);
  // A relation sorts before the neighbour: it takes the key's bits above the neighbour's.
  const int id_bits = n <= 1 ? 1 : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n - 1)));
  std::int32_t max_relation = 0;
  for (const std::int32_t r : edges.relation) max_relation = std::max(max_relation, r);
  for (const std::int32_t r : edges.reverse_relation) max_relation = std::max(max_relation, r);
  if (related && id_bits + 1 + static_cast<int>(std::bit_width(static_cast<std::uint32_t>(max_relation))) > 63)
    throw InputError("", "", std::to_string(n) + " nodes and " + std::to_string(max_relation + 1) + " relations: more than a 63-bit sort key holds");
  auto key = [&](std::size_t i, NodeId v, bool reverse) -> std::int64_t {
    if (!related) return v << 1 | (reverse ? 1 : 0);
    const std::int32_t r = edges.relation[i];
    return ((static_cast<std::int64_t>(reverse ? edges.reverse_relation[static_cast<std::size_t>(r)] : r) << id_bits | v) << 1) | (reverse ? 1 : 0);
  };
  // With relations, a self-loop's reverse is another entry unless its relation is its own reverse.
  auto own_reverse = [&](std::size_t i) {
    return !related || !opt.symmetrize || edges.reverse_relation[static_cast<std::size_t>(edges.relation[i])] == edges.relation[i];
  };

  // Pass 1: count entries per row (self-loops dropped here, reverses added here).
  std::vector<EdgeId> count(static_cast<std::size_t>(n) + 1, 0);
  for (std::size_t i = 0; i < m; ++i) {
    const NodeId u = edges.src[i], v = edges.dst[i];
    if (u == v) {
      if (opt.drop_self_loops) { ++rep.self_loops_dropped; continue; }
      count[u + 1] += own_reverse(i) ? 1 : 2;
      continue;  // a self-loop is its own reverse (unless its relation's reverse is another)
    }
    ++count[u + 1];
    if (opt.symmetrize) ++count[v + 1];
  }
  std::partial_sum(count.begin(), count.end(), count.begin());
  const std::size_t staged = static_cast<std::size_t>(count[n]);

  // Pass 2: scatter.
  std::vector<RowEntry> entries(staged);
  {
    std::vector<EdgeId> pos(count.begin(), count.end() - 1);
    for (std::size_t i = 0; i < m; ++i) {
      const NodeId u = edges.src[i], v = edges.dst[i];
      const std::int64_t w = weighted ? edges.weight[i] : 0;
      if (u == v) {
        if (opt.drop_self_loops) continue;
        entries[pos[u]++] = {key(i, v, false), w};
        if (!own_reverse(i)) entries[pos[u]++] = {key(i, u, true), w};
        continue;
      }
      entries[pos[u]++] = {key(i, v, false), w};
      if (opt.symmetrize) entries[pos[v]++] = {key(i, u, true), w};
    }
  }
  // The input is no longer needed: give its memory back before the rows are compacted.
  edges = EdgeList{};

  // Pass 3: sort each row and resolve runs of equal neighbours, compacting in place.
  std::vector<EdgeId> indptr(static_cast<std::size_t>(n) + 1, 0);
  std::vector<NodeId> indices;
  indices.reserve(staged);
  std::vector<std::int64_t> weights;
  if (weighted) weights.reserve(staged);
  std::vector<std::int32_t> relations;
  if (related) relations.reserve(staged);
  RowResolver resolve{opt, rep, related ? (std::int64_t{1} << id_bits) - 1 : -1};
  for (NodeId u = 0; u < n; ++u) {
    auto first = entries.begin() + count[u], last = entries.begin() + count[u + 1];
    std::sort(first, last);
    resolve(u, first, last, [&](std::int64_t nb, std::int64_t w) {
      indices.push_back(nb & resolve.neighbour_mask);
      if (weighted) weights.push_back(w);
      if (related) relations.push_back(static_cast<std::int32_t>(nb >> id_bits));
    });
    indptr[u + 1] = static_cast<EdgeId>(indices.size());
  }
  entries = {};
  indices.shrink_to_fit();
  rep.output_entries = static_cast<std::int64_t>(indices.size());
  rep.no_self_loops = !resolve.saw_self_loop;
  rep.no_duplicates = !resolve.saw_duplicate;
  out.graph = CsrGraph(Array<EdgeId>(std::move(indptr)), Array<NodeId>(std::move(indices)));
  // Symmetry is known when it was made; otherwise one check now (rows are sorted) spares every
  // later consumer (METIS needs it) from repeating it. Rows ordered by relation first are not
  // sorted by neighbour: their symmetry stays unknown unless made.
  rep.symmetric = opt.symmetrize || (!related && is_symmetric(out.graph));
  out.weights = std::move(weights);
  out.relations = std::move(relations);
  return out;
}

namespace {

// A staged entry of the external build, one integer: its row within its bucket above its key
// (neighbour << 1 | is_reverse), so integer order is (row, key) order. Half the bytes of a (row,
// key) pair through the bucket files' round trip, and an integer sort is several times faster
// than a comparison of pairs (measured in docs/results/scale.md).
using BucketEntry = std::uint64_t;

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

File open_file(const std::string& path, const char* mode) {
  File f(std::fopen(path.c_str(), mode), &std::fclose);
  if (!f) throw InputError(path, "", std::string("cannot open: ") + std::strerror(errno));
  return f;
}

void write_all(std::FILE* f, const void* data, std::size_t bytes, const std::string& path) {
  if (bytes > 0 && std::fwrite(data, 1, bytes, f) != bytes) throw InputError(path, "", std::string("write failed: ") + std::strerror(errno));
}

void close_checked(File& f, const std::string& path) {
  if (std::fclose(f.release()) != 0) throw InputError(path, "", std::string("write failed: ") + std::strerror(errno));
}

}  // namespace

CsrGraph map_csr(const ExternalCsr& built) {
  NpyBuffer indices = map_npy(built.indices_path);
  if (indices.header.dtype == DType::kInt32) return CsrGraph(npy_view<EdgeId>(map_npy(built.indptr_path), 1), npy_view<std::int32_t>(indices, 1));
  return CsrGraph(npy_view<EdgeId>(map_npy(built.indptr_path), 1), npy_view<NodeId>(indices, 1));
}

ExternalCsr build_csr_external(std::int64_t num_nodes, std::int64_t expected_edges, const std::function<void(const EdgeSink&)>& produce,
                               const CleanOptions& opt, const std::string& scratch, std::uint64_t memory_bytes) {
  namespace fs = std::filesystem;
  const std::int64_t n = num_nodes;
  ExternalCsr out;
  CleanReport& rep = out.report;
  const double expected_entries = static_cast<double>(std::max<std::int64_t>(expected_edges, 1)) * (opt.symmetrize ? 2 : 1);
  const auto budget = static_cast<double>(std::max<std::uint64_t>(memory_bytes, 4096));
  const auto wanted = static_cast<std::int64_t>(std::clamp(std::ceil(expected_entries * sizeof(BucketEntry) / budget), 1.0, static_cast<double>(std::max<std::int64_t>(n, 1))));
  // A key takes the bits of 2n; a bucket's rows the rest of the 64 (all of a bucket's rows below
  // 2^31 nodes, fewer rows a bucket past that).
  const int key_bits = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(2 * n - 1, 1))));
  const std::uint64_t key_mask = (std::uint64_t{1} << key_bits) - 1;
  const std::int64_t max_rows = key_bits >= 63 ? 1 : static_cast<std::int64_t>(std::min<std::uint64_t>(std::uint64_t{1} << (64 - key_bits), static_cast<std::uint64_t>(std::max<std::int64_t>(n, 1))));
  const std::int64_t rows_per_bucket = std::min(max_rows, std::max<std::int64_t>(1, (n + wanted - 1) / wanted));
  // Recounted from the rounded-up range, so that every bucket starts at a row (else the last few
  // would begin past the end of indptr).
  const std::int64_t buckets = std::max<std::int64_t>(1, (n + rows_per_bucket - 1) / rows_per_bucket);
  auto bucket_path = [&](std::int64_t b, const char* kind) { return (fs::path(scratch) / (std::string(kind) + "-" + std::to_string(b) + ".bin")).string(); };

  // Pass 1: scatter every entry to its row's bucket, through a buffer per bucket.
  steps::begin("build: entries to bucket files");
  {
    std::vector<File> files;
    for (std::int64_t b = 0; b < buckets; ++b) files.push_back(open_file(bucket_path(b, "bucket"), "wb"));
    const std::size_t per_buffer = std::max<std::size_t>(4096, static_cast<std::size_t>(budget / 4 / sizeof(BucketEntry) / static_cast<double>(buckets)));
    std::vector<std::vector<BucketEntry>> buffers(static_cast<std::size_t>(buckets));
    auto stage = [&](std::int64_t row, std::int64_t key) {
      const auto b = static_cast<std::size_t>(row / rows_per_bucket);
      auto& buf = buffers[b];
      assert(static_cast<std::uint64_t>(key) <= key_mask);  // readers check ids against n first
      buf.push_back(static_cast<std::uint64_t>(row - static_cast<std::int64_t>(b) * rows_per_bucket) << key_bits | static_cast<std::uint64_t>(key));
      if (buf.size() >= per_buffer) {
        write_all(files[b].get(), buf.data(), buf.size() * sizeof(BucketEntry), bucket_path(static_cast<std::int64_t>(b), "bucket"));
        buf.clear();
      }
    };
    produce([&](std::span<const NodeId> src, std::span<const NodeId> dst) {
      assert(src.size() == dst.size());
      rep.input_entries += static_cast<std::int64_t>(src.size());
      for (std::size_t i = 0; i < src.size(); ++i) {
        const NodeId u = src[i], v = dst[i];
        if (u == v) {
          if (opt.drop_self_loops) ++rep.self_loops_dropped;
          else stage(u, v << 1);
          continue;  // a self-loop is its own reverse
        }
        stage(u, v << 1);
        if (opt.symmetrize) stage(v, (u << 1) | 1);
      }
    });
    for (std::int64_t b = 0; b < buckets; ++b) {
      const auto& buf = buffers[static_cast<std::size_t>(b)];
      write_all(files[static_cast<std::size_t>(b)].get(), buf.data(), buf.size() * sizeof(BucketEntry), bucket_path(b, "bucket"));
      close_checked(files[static_cast<std::size_t>(b)], bucket_path(b, "bucket"));
    }
  }

  // Pass 2: each bucket sorted and resolved into its rows' neighbours (to a file of its own, as the
  // total, which the indices file's header needs, is known only at the end).
  steps::begin("build: buckets sorted into rows");
  std::vector<EdgeId> indptr(static_cast<std::size_t>(n) + 1, 0);
  RowResolver resolve{opt, rep};
  for (std::int64_t b = 0; b < buckets; ++b) {
    const std::string in = bucket_path(b, "bucket"), resolved = bucket_path(b, "rows");
    std::vector<BucketEntry> entries(static_cast<std::size_t>(fs::file_size(in) / sizeof(BucketEntry)));
    {
      File f = open_file(in, "rb");
      if (std::fread(entries.data(), sizeof(BucketEntry), entries.size(), f.get()) != entries.size())
        throw InputError(in, "", std::string("read failed: ") + std::strerror(errno));
    }
    fs::remove(in);
    boost::sort::pdqsort(entries.begin(), entries.end());
    // The neighbours overwrite the sorted entries from the front: never more of them than
    // entries read so far, each the size of an entry, so no second buffer is needed. A row's
    // entries lose their row bits first, leaving the keys RowResolver reads.
    static_assert(sizeof(NodeId) <= sizeof(BucketEntry), "a neighbour fits where its entry was");
    auto* const out_bytes = reinterpret_cast<char*>(entries.data());
    std::size_t kept = 0;
    const std::int64_t first_row = b * rows_per_bucket, end_row = std::min(n, first_row + rows_per_bucket);
    auto it = entries.begin();
    for (std::int64_t u = first_row; u < end_row; ++u) {
      const auto local = static_cast<std::uint64_t>(u - first_row);
      auto row_end = it;
      for (; row_end != entries.end() && *row_end >> key_bits == local; ++row_end) *row_end &= key_mask;
      resolve(u, it, row_end, [&](NodeId nb, std::int64_t) { std::memcpy(out_bytes + sizeof(NodeId) * kept++, &nb, sizeof(NodeId)); });
      indptr[static_cast<std::size_t>(u) + 1] = static_cast<EdgeId>(kept);
      it = row_end;
    }
    File f = open_file(resolved, "wb");
    write_all(f.get(), out_bytes, kept * sizeof(NodeId), resolved);
    close_checked(f, resolved);
  }
  // Row lengths to offsets: each bucket recorded its own running count.
  steps::begin("build: CSR files written");
  for (std::int64_t b = 0; b < buckets; ++b) {
    const std::int64_t first_row = b * rows_per_bucket, end_row = std::min(n, first_row + rows_per_bucket);
    const EdgeId base = indptr[static_cast<std::size_t>(first_row)];
    for (std::int64_t u = first_row; u < end_row; ++u) indptr[static_cast<std::size_t>(u) + 1] += base;
  }
  rep.output_entries = indptr[static_cast<std::size_t>(n)];
  rep.no_self_loops = !resolve.saw_self_loop;
  rep.no_duplicates = !resolve.saw_duplicate;

  out.indptr_path = (fs::path(scratch) / "indptr.npy").string();
  out.indices_path = (fs::path(scratch) / "indices.npy").string();
  write_npy(out.indptr_path, std::span<const EdgeId>(indptr));
  indptr = {};
  const std::int64_t total = rep.output_entries;
  // The CSR is written at the width a dataset keeps it (half the bytes where the ids fit int32).
  const bool narrow = ids_fit_int32(n);
  write_npy_streamed(out.indices_path, narrow ? DType::kInt32 : DType::kInt64, std::span<const std::int64_t>(&total, 1), [&](const NpySink& sink) {
    std::vector<NodeId> chunk(std::size_t{1} << 20);
    std::vector<std::int32_t> narrowed;
    for (std::int64_t b = 0; b < buckets; ++b) {
      const std::string resolved = bucket_path(b, "rows");
      File f = open_file(resolved, "rb");
      for (std::size_t got; (got = std::fread(chunk.data(), sizeof(NodeId), chunk.size(), f.get())) > 0;) sink_ids(sink, chunk.data(), got, narrow, narrowed);
      if (std::ferror(f.get())) throw InputError(resolved, "", std::string("read failed: ") + std::strerror(errno));
      f.reset();
      fs::remove(resolved);
    }
  });
  if (opt.symmetrize) {
    rep.symmetric = true;
  } else {
    rep.symmetric = is_symmetric(map_csr(out));
  }
  return out;
}

BuiltGraph build_csr_streamed(std::int64_t num_nodes, std::int64_t expected_edges, const std::function<void(const EdgeSink&)>& produce,
                              const CleanOptions& options) {
  EdgeList edges;
  edges.num_nodes = num_nodes;
  edges.src.reserve(static_cast<std::size_t>(expected_edges));
  edges.dst.reserve(static_cast<std::size_t>(expected_edges));
  produce([&](std::span<const NodeId> src, std::span<const NodeId> dst) {
    edges.src.insert(edges.src.end(), src.begin(), src.end());
    edges.dst.insert(edges.dst.end(), dst.begin(), dst.end());
  });
  return build_csr(std::move(edges), options);
}

}  // namespace shardgnn
