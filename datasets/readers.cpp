// Readers for the input formats. Each validates as it reads and throws InputError naming the
// file, the position (line/column for text, byte offset or member/element for binary) and what
// was expected. Graph cleaning (symmetrise, self-loops, duplicates) happens in build_csr.
#include "datasets/readers.hpp"
#include "datasets/reader_parts.hpp"


#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "datasets/error.hpp"
#include "datasets/names.hpp"
#include "datasets/npy.hpp"
#include "datasets/npz.hpp"
#include "datasets/text.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {
constexpr EnumName<InputFormat> kInputFormats[] = {{InputFormat::kAuto, "auto"},         {InputFormat::kNpz, "npz"}, {InputFormat::kMetis, "metis"},
                                                   {InputFormat::kEdgeList, "edgelist"}, {InputFormat::kOgb, "ogb"}, {InputFormat::kEdgeList, "snap"},
                                                   {InputFormat::kGraphsaint, "graphsaint"}, {InputFormat::kIgbh, "igbh"}};
}  // namespace

InputFormat parse_input_format(const std::string& name) { return parse_enum(kInputFormats, name, "input format"); }

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "a/b/soc-Slashdot0902.txt.gz" -> "soc-Slashdot0902"
}  // namespace

std::string default_name(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  std::string name = p.filename().string();
  for (const char* ext : {".gz", ".npz", ".graph", ".metis", ".txt", ".tsv", ".csv", ".el", ".edges"})
    if (ends_with(name, ext) && name.size() > std::strlen(ext)) name.resize(name.size() - std::strlen(ext));
  return name.empty() ? "dataset" : name;
}

std::string ogb_file(const std::string& dir, const std::string& rel) {
  for (const char* ext : {".csv.gz", ".csv"}) {
    std::string p = (fs::path(dir) / (rel + ext)).string();
    if (fs::exists(p)) return p;
  }
  return {};
}


InputFormat detect_format(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!ogb_file(path, "raw/edge").empty() || !ogb_file(path, "raw/num-node-dict").empty()) return InputFormat::kOgb;
    if (fs::exists(fs::path(path) / "adj_full.npz", ec)) return InputFormat::kGraphsaint;
    if (fs::is_directory(fs::path(path) / "processed", ec) || fs::exists(fs::path(path) / "paper" / "node_feat.npy", ec)) return InputFormat::kIgbh;
    throw InputError(path, "",
                     "is a folder without raw/edge.csv.gz or raw/num-node-dict.csv.gz (OGB), adj_full.npz (GraphSAINT) or processed/ (IGB-Het); "
                     "expected one of those or a file");
  }
  std::string p = path;
  if (ends_with(p, ".gz")) p.resize(p.size() - 3);
  if (ends_with(p, ".npz")) return InputFormat::kNpz;
  if (ends_with(p, ".graph") || ends_with(p, ".metis")) return InputFormat::kMetis;
  return InputFormat::kEdgeList;
}

Dataset read_dataset(const std::string& path, const ReadOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(path, "", "no such file or folder");
  InputFormat f = options.format == InputFormat::kAuto ? detect_format(path) : options.format;
  if (options.add_reverse && f != InputFormat::kOgb && f != InputFormat::kIgbh)
    throw InputError(path, "", "--add-reverse applies to typed inputs (OGB's heterogeneous layout, IGB-Het); use --symmetrize for one node type");
  if (options.relation_ids && f != InputFormat::kOgb && f != InputFormat::kIgbh)
    throw InputError(path, "", "--relation-ids applies to typed inputs (OGB's heterogeneous layout, IGB-Het)");
  switch (f) {
    case InputFormat::kNpz: return read_npz_dataset(path, options);
    case InputFormat::kMetis: return read_metis_dataset(path, options);
    case InputFormat::kEdgeList: return read_edge_list_dataset(path, options);
    case InputFormat::kOgb: return read_ogb_dataset(path, options);
    case InputFormat::kGraphsaint: return read_graphsaint_dataset(path, options);
    case InputFormat::kIgbh: return read_igbh_dataset(path, options);
    case InputFormat::kAuto: break;
  }
  throw InputError(path, "", "cannot tell the input format; pass --format");
}

// ---------------------------------------------------------------------------------------------
// npz (Planetoid / gnn-benchmark layout)

namespace {

std::string member_pos(const std::string& member, std::size_t element) {
  return "member '" + member + ".npy', element " + std::to_string(element);
}

// Reads and checks a CSR matrix's offsets (`prefix`_indptr, or `member`): rows + 1 of them,
// from 0, non-decreasing. Streamed, so a deflated member is never inflated whole.
std::vector<std::int64_t> read_csr_offsets(const NpzArchive& z, const std::string& member, std::int64_t rows) {
  const NpyStream s = z.stream(member);
  if (s.header.shape.size() == 1 && s.header.shape[0] != rows + 1)
    throw InputError(z.path(), "member '" + member + ".npy'", "has " + std::to_string(s.header.shape[0]) + " entries, expected rows + 1 = " + std::to_string(rows + 1));
  std::vector<std::int64_t> indptr;
  indptr.reserve(static_cast<std::size_t>(rows) + 1);
  npy_for_each<std::int64_t>(s, 1, std::size_t{1} << 20, [&](std::span<const std::int64_t> v, std::uint64_t) { indptr.insert(indptr.end(), v.begin(), v.end()); });
  if (indptr.front() != 0) throw InputError(z.path(), member_pos(member, 0), "must be 0");
  for (std::size_t i = 1; i < indptr.size(); ++i)
    if (indptr[i] < indptr[i - 1]) throw InputError(z.path(), member_pos(member, i), "decreases: indptr must be non-decreasing");
  return indptr;
}

// Checks that a CSR matrix's column member holds the offsets' entries, and returns its stream.
NpyStream csr_columns(const NpzArchive& z, const std::string& member, const std::string& offsets_member, const std::vector<std::int64_t>& indptr) {
  NpyStream s = z.stream(member);
  if (s.header.shape.size() == 1 && s.header.shape[0] != indptr.back())
    throw InputError(z.path(), member_pos(offsets_member, indptr.size() - 1),
                     "is " + std::to_string(indptr.back()) + ", expected the number of entries " + std::to_string(s.header.shape[0]));
  return s;
}

// Hands a CSR matrix's columns to fn in pieces, with each entry's row; columns must be below `cols`.
void for_each_csr_entry(const NpzArchive& z, const NpyStream& columns, const std::string& member, const std::vector<std::int64_t>& indptr, std::int64_t cols,
                        const std::function<void(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, std::uint64_t first)>& fn) {
  std::vector<std::int64_t> row;
  std::int64_t u = 0;
  npy_for_each<std::int64_t>(columns, 1, std::size_t{1} << 20, [&](std::span<const std::int64_t> v, std::uint64_t first) {
    row.resize(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] < 0 || v[i] >= cols)
        throw InputError(z.path(), member_pos(member, first + i), "column " + std::to_string(v[i]) + " out of range [0, " + std::to_string(cols) + ")");
      while (indptr[static_cast<std::size_t>(u) + 1] <= static_cast<std::int64_t>(first + i)) ++u;
      row[i] = u;
    }
    fn(row, v, first);
  });
}

std::vector<std::int64_t> read_shape2(const NpzArchive& z, const std::string& member) {
  auto shape = npy_to_vector<std::int64_t>(z.read(member), 1);
  if (shape.size() != 2) throw InputError(z.path(), "member '" + member + ".npy'", "expected 2 entries (rows, columns), found " + std::to_string(shape.size()));
  if (shape[0] < 0 || shape[1] < 0) throw InputError(z.path(), "member '" + member + ".npy'", "negative count in shape");
  return shape;
}

Array<NodeId> read_split(const NpzArchive& z, const std::string& member, std::int64_t n) {
  if (!z.contains(member)) return {};
  auto idx = npy_to_vector<std::int64_t>(z.read(member), 1);
  for (std::size_t i = 0; i < idx.size(); ++i)
    if (idx[i] < 0 || idx[i] >= n) throw InputError(z.path(), member_pos(member, i), "node id " + std::to_string(idx[i]) + " out of range [0, " + std::to_string(n) + ")");
  return Array<NodeId>(std::move(idx));
}

}  // namespace

void set_labels(Dataset& ds, std::vector<std::int64_t> labels, const std::string& path, const std::string& pos_prefix, std::size_t first) {
  std::int64_t max_label = -1;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < -1) throw InputError(path, pos_prefix + std::to_string(first + i), "label " + std::to_string(labels[i]) + ", expected >= 0 or -1 for unlabelled");
    // Labels size the model's output and the confusion matrices: a stray huge value is bad input.
    if (labels[i] >= (std::int64_t{1} << 31)) throw InputError(path, pos_prefix + std::to_string(i), "label " + std::to_string(labels[i]) + ", expected a class index below 2^31");
    max_label = std::max(max_label, labels[i]);
  }
  ds.num_classes = max_label + 1;
  if (ds.num_classes > 0) ds.labels = Array<std::int64_t>(std::move(labels));
}

void read_npz_adjacency(Dataset& ds, const NpzArchive& z, const std::string& indptr_member, const std::string& indices_member, std::int64_t n,
                        const ReadOptions& options) {
  const auto indptr = read_csr_offsets(z, indptr_member, n);
  const NpyStream columns = csr_columns(z, indices_member, indptr_member, indptr);
  const auto produce = [&](const EdgeSink& sink) {
    for_each_csr_entry(z, columns, indices_member, indptr, n, [&](std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, std::uint64_t) { sink(rows, cols); });
  };
  if (options.disk && options.disk->wanted(in_memory_build_bytes(static_cast<double>(indptr.back()), options.clean), "the graph")) {
    const ExternalCsr built = build_csr_external(n, indptr.back(), produce, options.clean, options.disk->scratch, options.disk->memory);
    ds.graph = map_csr(built);
    ds.cleaning = built.report;
    return;
  }
  BuiltGraph built = build_csr_streamed(n, indptr.back(), produce, options.clean);
  ds.graph = std::move(built.graph);
  ds.cleaning = built.report;
}

std::int64_t read_feature_matrix(Dataset& ds, const NpyStream& s, const NpyBuffer* mapped, std::int64_t n, const ReadOptions& options,
                                 const std::string& file, const std::string& element_prefix) {
  const auto& shape = s.header.shape;
  if (shape.size() != 2 || shape[0] != n)
    throw InputError(file, element_prefix.find(',') == std::string::npos ? "" : element_prefix.substr(0, element_prefix.find(',')),
                     "expected a 2-d array with one feature row per node (" + std::to_string(n) + " x F)");
  const auto check = [&](std::span<const float> x, std::uint64_t first) {
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!std::isfinite(x[i])) throw InputError(file, element_prefix + std::to_string(first + i), "non-finite feature value, expected a finite number");
  };
  const NpyHeader& h = s.header;
  if (mapped != nullptr && h.dtype == DType::kFloat32 && !h.big_endian && !h.fortran_order &&
      reinterpret_cast<std::uintptr_t>(mapped->data().data()) % alignof(float) == 0) {
    // float32 as stored: the file's pages are the features, no copy.
    ds.features = npy_view<float>(*mapped, 2);
    for (std::size_t off = 0; off < ds.features.size(); off += std::size_t{1} << 20)
      check(ds.features.subspan(off, std::min<std::size_t>(ds.features.size() - off, std::size_t{1} << 20)), off);
    return shape[1];
  }
  if (options.disk && options.disk->wanted(4.0 * static_cast<double>(s.header.count()), "the features")) {
    // Converted into a file of the scratch folder, piece by piece, and mapped from there.
    const std::string out = (fs::path(options.disk->scratch) / "features.npy").string();
    write_npy_streamed(out, DType::kFloat32, shape, [&](const NpySink& sink) {
      npy_for_each<float>(s, 2, std::size_t{1} << 20, [&](std::span<const float> x, std::uint64_t first) {
        check(x, first);
        sink(x.data(), x.size_bytes());
      });
    });
    ds.features = npy_view<float>(map_npy(out), 2);
    return shape[1];
  }
  std::vector<float> f;
  f.reserve(static_cast<std::size_t>(s.header.count()));
  npy_for_each<float>(s, 2, std::size_t{1} << 20, [&](std::span<const float> x, std::uint64_t first) {
    check(x, first);
    f.insert(f.end(), x.begin(), x.end());
  });
  ds.features = Array<float>(std::move(f));
  return shape[1];
}

Dataset read_npz_dataset(const std::string& path, const ReadOptions& options) {
  NpzArchive z(path);
  Dataset ds;
  ds.name = options.name.empty() ? default_name(path) : options.name;
  ds.source = path + " (npz)";

  const auto adj_shape = read_shape2(z, "adj_shape");
  const std::int64_t n = adj_shape[0];
  if (adj_shape[1] != n) throw InputError(path, "member 'adj_shape.npy'", "adjacency is " + std::to_string(n) + " x " + std::to_string(adj_shape[1]) + ", expected square");
  read_npz_adjacency(ds, z, "adj_indptr", "adj_indices", n, options);

  if (z.contains("attr_data")) {
    const auto shape = read_shape2(z, "attr_shape");
    if (shape[0] != n) throw InputError(path, "member 'attr_shape.npy'", "features have " + std::to_string(shape[0]) + " rows, expected one per node (" + std::to_string(n) + ")");
    const auto fptr = read_csr_offsets(z, "attr_indptr", n);
    const NpyStream fidx = csr_columns(z, "attr_indices", "attr_indptr", fptr);
    auto fval = npy_to_vector<float>(z.read("attr_data"), 1);
    if (fval.size() != static_cast<std::size_t>(fptr.back())) throw InputError(path, "member 'attr_data.npy'", "has " + std::to_string(fval.size()) + " values, expected " + std::to_string(fptr.back()) + " (as attr_indices)");
    std::int64_t cells = 0;
    // n x F dense floats: a crafted shape must not wrap the size (the writes below would overrun).
    if (__builtin_mul_overflow(n, shape[1], &cells) || cells > (std::int64_t{1} << 40))
      throw InputError(path, "member 'attr_shape.npy'", std::to_string(n) + " x " + std::to_string(shape[1]) + " features are too many to densify");
    ds.feature_dim = shape[1];
    std::vector<float> dense(static_cast<std::size_t>(cells), 0.0f);
    for_each_csr_entry(z, fidx, "attr_indices", fptr, shape[1], [&](std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, std::uint64_t first) {
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const float x = fval[first + i];
        if (!std::isfinite(x)) throw InputError(path, member_pos("attr_data", first + i), std::string(std::isnan(x) ? "NaN" : "infinite") + " feature value, expected a finite number");
        dense[static_cast<std::size_t>(rows[i] * ds.feature_dim + cols[i])] += x;
      }
    });
    ds.features = Array<float>(std::move(dense));
  } else if (z.contains("attr_matrix")) {
    ds.feature_dim = read_feature_matrix(ds, z.stream("attr_matrix"), nullptr, n, options, path, "member 'attr_matrix.npy', element ");
  }

  if (z.contains("labels")) {
    const NpyStream labels = z.stream("labels");
    const auto& shape = labels.header.shape;
    if (shape.size() == 2 && shape[0] == n && shape[1] > 0) {
      // A label matrix: a set of labels per node (multi-label), packed as it streams.
      ds.multilabel = true;
      ds.num_classes = shape[1];
      const auto C = static_cast<std::uint64_t>(shape[1]), row = static_cast<std::uint64_t>(label_row_bytes(ds.num_classes));
      std::vector<std::uint8_t> bits(static_cast<std::size_t>(n) * row, 0);
      npy_for_each<std::uint8_t>(labels, 2, std::size_t{1} << 20, [&](std::span<const std::uint8_t> x, std::uint64_t first) {
        for (std::size_t i = 0; i < x.size(); ++i) {
          const std::uint64_t at = first + i, v = at / C, c = at % C;
          if (x[i] > 1)
            throw InputError(path, member_pos("labels", at), "label entry " + std::to_string(x[i]) + " (node " + std::to_string(v) + ", label " + std::to_string(c) + "), expected 0 or 1");
          if (x[i]) set_label(bits.data() + v * row, static_cast<std::int64_t>(c));
        }
      });
      ds.label_bits = Array<std::uint8_t>(std::move(bits));
    } else if (shape.size() == 1 && shape[0] == n) {
      set_labels(ds, npy_to_vector<std::int64_t>(z.read("labels"), 1), path, "member 'labels.npy', element ");
    } else {
      throw InputError(path, "member 'labels.npy'", "expected one label per node (" + std::to_string(n) + "), or an " + std::to_string(n) +
                                                        " x C matrix of 0/1 entries (a set of labels per node)");
    }
  }
  ds.train_idx = read_split(z, "idx_train", n);
  ds.val_idx = read_split(z, "idx_val", n);
  ds.test_idx = read_split(z, "idx_test", n);
  return ds;
}

// ---------------------------------------------------------------------------------------------
// METIS graph text: "n m [fmt [ncon]]", then one line per vertex (1-based neighbours).

Dataset read_metis_dataset(const std::string& path, const ReadOptions& options) {
  struct State {
    bool have_header = false;
    std::int64_t n = 0, m = 0, ncon = 0;
    bool has_vsize = false, has_vweights = false, has_eweights = false;
    std::int64_t vertex = 0;  // next vertex (0-based)
    EdgeList el;
    std::vector<std::int64_t> vweights;
  } st;
  std::error_code size_ec;
  const std::uint64_t file_bytes = fs::file_size(path, size_ec);  // compressed size for .gz: only a reserve hint

  for_each_text_chunk(path, [&](std::string_view text, std::uint64_t first_line) {
    TextCursor c(text, first_line, path);
    while (!c.at_end()) {
      if (c.peek() == '%') { c.next_line(); continue; }
      if (!st.have_header) {
        c.skip_blanks();
        if (c.at_eol()) { c.next_line(); continue; }
        st.n = c.read_int("the number of vertices");
        if (st.n < 0) c.fail("negative vertex count " + std::to_string(st.n));
        c.skip_blanks();
        st.m = c.read_int("the number of edges");
        if (st.m < 0) c.fail("negative edge count " + std::to_string(st.m));
        if (st.m > std::numeric_limits<std::int64_t>::max() / 2) c.fail("edge count " + std::to_string(st.m) + " is too large (2m must fit in 64 bits)");
        c.skip_blanks();
        if (!c.at_eol()) {
          std::string fmt(c.token());
          if (fmt.size() > 3 || fmt.find_first_not_of("01") != std::string::npos) c.fail("format field " + quote_token(fmt) + ", expected up to three 0/1 digits (e.g. 011)");
          fmt.insert(0, 3 - fmt.size(), '0');
          st.has_vsize = fmt[0] == '1';
          st.has_vweights = fmt[1] == '1';
          st.has_eweights = fmt[2] == '1';
          c.read_int("the format field");
          c.skip_blanks();
          if (!c.at_eol()) {
            st.ncon = c.read_int("the number of vertex weights");
            if (st.ncon < 1) c.fail("number of vertex weights must be >= 1");
            if (!st.has_vweights) c.fail("number of vertex weights given but the format field has no vertex weights");
            c.skip_blanks();
            if (!c.at_eol()) c.fail("unexpected " + quote_token(c.token()) + " after the header");
          }
        }
        if (st.has_vweights && st.ncon == 0) st.ncon = 1;
        st.have_header = true;
        st.el.num_nodes = st.n;
        // Reserve what the header announces, but no more than the file could hold (an entry takes
        // at least 2 bytes), so a bogus header cannot trigger a huge allocation.
        const auto entries = static_cast<std::size_t>(std::min<std::uint64_t>(static_cast<std::uint64_t>(2 * st.m), file_bytes / 2 + 1));
        st.el.src.reserve(entries);
        st.el.dst.reserve(entries);
        c.next_line();
        continue;
      }
      if (st.vertex >= st.n) {
        c.skip_blanks();
        if (!c.at_eol()) c.fail("unexpected data after the " + std::to_string(st.n) + " vertex lines the header announced");
        c.next_line();
        continue;
      }
      const NodeId u = st.vertex++;
      c.skip_blanks();
      if (st.has_vsize && !c.at_eol()) {
        if (c.read_int("a vertex size") < 0) c.fail("negative vertex size");
        c.skip_blanks();
      }
      for (std::int64_t k = 0; k < st.ncon; ++k) {
        const std::int64_t w = c.read_int("a vertex weight");
        if (w < 0) c.fail("negative vertex weight " + std::to_string(w));
        st.vweights.push_back(w);
        c.skip_blanks();
      }
      while (!c.at_eol()) {
        const std::int64_t v = c.read_int("a neighbour id");
        if (v < 1 || v > st.n) c.fail("neighbour id " + std::to_string(v) + " out of range [1, " + std::to_string(st.n) + "]");
        std::int64_t w = 1;
        if (st.has_eweights) {
          c.skip_blanks();
          w = c.read_int("an edge weight");
          if (w <= 0) c.fail("edge weight " + std::to_string(w) + ", expected > 0");
        }
        if (static_cast<std::int64_t>(st.el.src.size()) >= 2 * st.m)
          c.fail("more adjacency entries than the header's " + std::to_string(st.m) + " edges allow (2m = " + std::to_string(2 * st.m) + ")");
        st.el.src.push_back(u);
        st.el.dst.push_back(v - 1);
        if (st.has_eweights) st.el.weight.push_back(w);
        c.skip_blanks();
      }
      c.next_line();
    }
  });
  if (!st.have_header) throw InputError(path, at_line(1), "empty file, expected a METIS header 'vertices edges [format [ncon]]'");
  if (st.vertex < st.n)
    throw InputError(path, "end of file", "found " + std::to_string(st.vertex) + " vertex lines, the header announced " + std::to_string(st.n) + " (truncated file?)");
  if (static_cast<std::int64_t>(st.el.src.size()) != 2 * st.m)
    throw InputError(path, "end of file", "found " + std::to_string(st.el.src.size()) + " adjacency entries, the header's " + std::to_string(st.m) + " edges need 2m = " + std::to_string(2 * st.m));

  Dataset ds;
  ds.name = options.name.empty() ? default_name(path) : options.name;
  ds.source = path + " (metis)";
  if (st.has_vweights) {
    ds.node_weight_dim = st.ncon;
    ds.node_weights = Array<std::int64_t>(std::move(st.vweights));
  }
  BuiltGraph built = build_csr(std::move(st.el), options.clean);
  ds.graph = std::move(built.graph);
  ds.cleaning = built.report;
  if (!built.weights.empty()) ds.edge_weights = Array<std::int64_t>(std::move(built.weights));
  return ds;
}

// ---------------------------------------------------------------------------------------------
// Edge lists

namespace {

[[noreturn]] void edge_line_error(std::string_view line_text, std::uint64_t line, const std::string& origin, std::int64_t id_limit) {
  TextCursor c(line_text, line, origin);
  c.skip_blanks();
  for (int k = 0; k < 2; ++k) {
    if (k == 1) {
      c.skip_separator();
      if (c.at_eol()) c.fail("line has one node id, expected two (source and target)");
    }
    const std::int64_t id = c.read_int("a non-negative integer node id");
    if (id < 0) c.fail("negative node id " + std::to_string(id));
    if (id >= id_limit) c.fail("node id " + std::to_string(id) + " out of range [0, " + std::to_string(id_limit) + ")");
  }
  c.fail("malformed line, expected 'source target'");
}

}  // namespace

void parse_edge_list_text(std::string_view text, const std::string& origin, std::uint64_t first_line, RawEdges& out, std::int64_t id_limit) {
  const char* p = text.data();
  const char* const e = p + text.size();
  std::uint64_t line = first_line;
  auto is_digit = [](char ch) { return static_cast<unsigned char>(ch - '0') < 10; };
  auto is_sep = [](char ch) { return ch == ' ' || ch == '\t' || ch == ','; };
  // Hot loop: one pass, no allocation beyond the output vectors. Anything unusual falls to
  // edge_line_error, which re-reads the line slowly to say exactly what is wrong.
  while (p < e) {
    const char* const line_start = p;
    while (p < e && (*p == ' ' || *p == '\t')) ++p;
    if (p == e) break;
    const char ch = *p;
    if (ch == '\n') { ++p; ++line; continue; }
    if (ch == '\r' && (p + 1 == e || p[1] == '\n')) { p += (p + 1 == e) ? 1 : 2; ++line; continue; }
    if (ch == '#' || ch == '%') {
      const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(e - p));
      p = nl ? static_cast<const char*>(nl) + 1 : e;
      ++line;
      continue;
    }
    std::int64_t ids[2];
    bool ok = true;
    for (int k = 0; k < 2 && ok; ++k) {
      if (k == 1) {
        const char* before = p;
        while (p < e && is_sep(*p)) ++p;
        if (p == before) { ok = false; break; }
      }
      const char* s = p;
      std::uint64_t v = 0;
      while (p < e && is_digit(*p)) v = v * 10 + static_cast<std::uint64_t>(*p++ - '0');
      // 18 digits always fit in int64; longer tokens are re-parsed with a range check (19-digit
      // ids up to INT64_MAX are valid; anything longer falls to edge_line_error's message).
      if (p - s > 18) {
        std::int64_t big = 0;
        auto [end, ec] = std::from_chars(s, p, big);
        if (ec != std::errc() || end != p) ok = false;
        v = static_cast<std::uint64_t>(big);
      }
      if (p == s || static_cast<std::int64_t>(v) >= id_limit) ok = false;
      ids[k] = static_cast<std::int64_t>(v);
    }
    if (ok && p < e && !(is_sep(*p) || *p == '\n' || *p == '\r')) ok = false;
    const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(e - p));
    const char* line_end = nl ? static_cast<const char*>(nl) : e;
    if (!ok) edge_line_error(std::string_view(line_start, static_cast<std::size_t>(line_end - line_start)), line, origin, id_limit);
    out.src.push_back(ids[0]);
    out.dst.push_back(ids[1]);
    ++out.lines;
    p = nl ? line_end + 1 : e;
    ++line;
  }
  out.bytes += text.size();
}

RawEdges parse_edge_file(const std::string& path, std::int64_t id_limit) {
  RawEdges raw;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  // ~12 bytes per line is typical of small ids; reserving avoids most regrowth on plain files.
  if (!ec && !is_gzip_file(path)) {
    raw.src.reserve(size / 12);
    raw.dst.reserve(size / 12);
  }
  for_each_text_chunk(path, [&](std::string_view text, std::uint64_t first_line) { parse_edge_list_text(text, path, first_line, raw, id_limit); });
  return raw;
}



Dataset read_edge_list_dataset(const std::string& path, const ReadOptions& options) {
  if (options.num_nodes < 0) throw InputError("--num-nodes must be positive, got " + std::to_string(options.num_nodes));
  RawEdges raw = parse_edge_file(path, options.num_nodes > 0 ? options.num_nodes : std::numeric_limits<std::int64_t>::max());
  if (raw.lines == 0) throw InputError(path, at_line(1), raw.bytes == 0 ? "empty file, expected lines 'source target'" : "no edges found, expected lines 'source target'");
  Dataset ds;
  ds.name = options.name.empty() ? default_name(path) : options.name;
  ds.source = path + " (edge list)";
  EdgeList el;
  if (options.num_nodes > 0) {
    el.num_nodes = options.num_nodes;
  } else {
    // Relabel the ids that appear to 0..n-1 in increasing order, so an already dense 0-based
    // list keeps its ids. A dense table when ids are not too sparse, else sort + binary search.
    std::int64_t max_id = 0;
    for (auto v : raw.src) max_id = std::max(max_id, v);
    for (auto v : raw.dst) max_id = std::max(max_id, v);
    std::vector<std::int64_t> original;
    const std::size_t m = raw.src.size();
    if (static_cast<std::uint64_t>(max_id) < 4 * m + (1u << 20)) {
      std::vector<std::int64_t> map(static_cast<std::size_t>(max_id) + 1, 0);
      for (auto v : raw.src) map[v] = 1;
      for (auto v : raw.dst) map[v] = 1;
      std::int64_t next = 0;
      for (std::int64_t id = 0; id <= max_id; ++id)
        if (map[id]) { original.push_back(id); map[id] = next++; }
      for (auto& v : raw.src) v = map[v];
      for (auto& v : raw.dst) v = map[v];
    } else {
      original.reserve(2 * m);
      original.insert(original.end(), raw.src.begin(), raw.src.end());
      original.insert(original.end(), raw.dst.begin(), raw.dst.end());
      std::sort(original.begin(), original.end());
      original.erase(std::unique(original.begin(), original.end()), original.end());
      auto relabel = [&](std::int64_t v) { return static_cast<std::int64_t>(std::lower_bound(original.begin(), original.end(), v) - original.begin()); };
      for (auto& v : raw.src) v = relabel(v);
      for (auto& v : raw.dst) v = relabel(v);
    }
    el.num_nodes = static_cast<std::int64_t>(original.size());
    const bool identity = original.back() == el.num_nodes - 1;
    if (!identity) ds.node_ids = Array<std::int64_t>(std::move(original));
  }
  el.src = std::move(raw.src);
  el.dst = std::move(raw.dst);
  BuiltGraph built = build_csr(std::move(el), options.clean);
  ds.graph = std::move(built.graph);
  ds.cleaning = built.report;
  return ds;
}

Dataset read_edge_list_dataset_bounded(const std::string& path, const ReadOptions& options, const std::string& scratch, std::uint64_t memory) {
  if (options.num_nodes < 0) throw InputError("--num-nodes must be positive, got " + std::to_string(options.num_nodes));
  const bool relabel = options.num_nodes == 0;
  const std::int64_t id_limit = relabel ? std::numeric_limits<std::int64_t>::max() : options.num_nodes;
  // Pass 1: the edges counted and, when relabelling, the ids that appear marked.
  std::int64_t m = 0;
  std::uint64_t bytes = 0, lines = 0;
  std::vector<std::uint64_t> seen;  // a bit per id
  const std::uint64_t table_limit = std::max<std::uint64_t>(memory / 4, std::uint64_t{1} << 20);
  for_each_text_chunk(path, [&](std::string_view text, std::uint64_t first_line) {
    RawEdges raw;
    parse_edge_list_text(text, path, first_line, raw, id_limit);
    m += static_cast<std::int64_t>(raw.src.size());
    bytes += raw.bytes;
    lines += raw.lines;
    if (!relabel) return;
    for (const auto* ids : {&raw.src, &raw.dst})
      for (const std::int64_t v : *ids) {
        const auto word = static_cast<std::uint64_t>(v) / 64;
        if (word >= seen.size()) {
          if ((word + 1) * 8 > table_limit)
            throw InputError(path, "", "node id " + std::to_string(v) +
                                           " needs an id table larger than a quarter of --memory-limit: give --num-nodes for dense 0-based ids, or a larger --memory-limit");
          seen.resize(std::max<std::size_t>(word + 1, seen.size() * 2), 0);
        }
        seen[word] |= std::uint64_t{1} << (static_cast<std::uint64_t>(v) % 64);
      }
  });
  if (lines == 0) throw InputError(path, at_line(1), bytes == 0 ? "empty file, expected lines 'source target'" : "no edges found, expected lines 'source target'");
  Dataset ds;
  ds.name = options.name.empty() ? default_name(path) : options.name;
  ds.source = path + " (edge list)";
  // Relabelled id of v: the ids seen below it (a running count per 64-id word, then a popcount).
  std::vector<std::int64_t> below(seen.size() + 1, 0);
  for (std::size_t w = 0; w < seen.size(); ++w) below[w + 1] = below[w] + std::popcount(seen[w]);
  const std::int64_t n = relabel ? below.back() : options.num_nodes;
  if (relabel) {
    std::int64_t max_id = -1;
    for (std::size_t w = seen.size(); w-- > 0 && max_id < 0;)
      if (seen[w] != 0) max_id = static_cast<std::int64_t>(w * 64 + 63 - static_cast<std::size_t>(std::countl_zero(seen[w])));
    if (max_id + 1 != n) {
      std::vector<std::int64_t> original;
      original.reserve(static_cast<std::size_t>(n));
      for (std::size_t w = 0; w < seen.size(); ++w)
        for (std::uint64_t bits = seen[w]; bits != 0; bits &= bits - 1) original.push_back(static_cast<std::int64_t>(w * 64) + std::countr_zero(bits));
      ds.node_ids = Array<std::int64_t>(std::move(original));
    }
  }
  auto new_id = [&](std::int64_t v) {
    const auto w = static_cast<std::uint64_t>(v) / 64, bit = static_cast<std::uint64_t>(v) % 64;
    return below[w] + std::popcount(seen[w] & ((std::uint64_t{1} << bit) - 1));
  };
  // Pass 2: the edges, relabelled, into the bucket files.
  const ExternalCsr built = build_csr_external(
      n, m,
      [&](const EdgeSink& sink) {
        for_each_text_chunk(path, [&](std::string_view text, std::uint64_t first_line) {
          RawEdges raw;
          parse_edge_list_text(text, path, first_line, raw, id_limit);
          if (relabel) {
            for (auto& v : raw.src) v = new_id(v);
            for (auto& v : raw.dst) v = new_id(v);
          }
          sink(raw.src, raw.dst);
        });
      },
      options.clean, scratch, memory);
  ds.graph = map_csr(built);
  ds.cleaning = built.report;
  return ds;
}

// ---------------------------------------------------------------------------------------------
// OGB node-property-prediction raw layout

std::string require_ogb_file(const std::string& dir, const std::string& rel) {
  std::string p = ogb_file(dir, rel);
  if (p.empty()) throw InputError((fs::path(dir) / (rel + ".csv.gz")).string(), "", "missing from the OGB dataset folder");
  return p;
}

// Reads a CSV of one integer per line (split files, num-node-list, labels). "nan" is allowed only
// when nan_value is given (OGB marks unlabelled nodes so); integral floats ("3.0") are accepted
// because OGB writes some label files that way.
std::vector<std::int64_t> read_int_column(const std::string& path, const char* what, const std::int64_t* nan_value) {
  std::vector<std::int64_t> out;
  for_each_text_chunk(path, [&](std::string_view text, std::uint64_t first_line) {
    TextCursor c(text, first_line, path);
    while (!c.at_end()) {
      c.skip_blanks();
      if (c.at_eol()) { c.next_line(); continue; }
      const std::string_view tok = c.token();
      if (nan_value && (tok == "nan" || tok == "NaN")) {
        out.push_back(*nan_value);
        c.skip_token();
      } else if (tok.find_first_of(".eE") != std::string_view::npos) {
        const double d = c.read_double(what);
        if (d != std::floor(d) || std::fabs(d) > 9e15) c.fail(std::string("expected ") + what + ", found " + quote_token(tok));
        out.push_back(static_cast<std::int64_t>(d));
      } else {
        out.push_back(c.read_int(what));
      }
      c.skip_blanks();
      if (!c.at_eol()) c.fail("expected one value per line, found another column " + quote_token(c.token()));
      c.next_line();
    }
  });
  return out;
}


FeatureCsv read_feature_csv(const std::string& p) {
  FeatureCsv out;
  for_each_text_chunk(p, [&](std::string_view text, std::uint64_t first_line) {
    TextCursor c(text, first_line, p);
    while (!c.at_end()) {
      c.skip_blanks();
      if (c.at_eol()) { c.next_line(); continue; }
      std::int64_t cols = 0;
      while (!c.at_eol()) {
        const double v = c.read_double("a feature value");
        if (!std::isfinite(v)) c.fail(std::string(std::isnan(v) ? "NaN" : "infinite") + " feature value, expected a finite number");
        out.values.push_back(static_cast<float>(v));
        ++cols;
        c.skip_separator();
      }
      if (out.dim == 0) out.dim = cols;
      else if (cols != out.dim) c.fail("row has " + std::to_string(cols) + " features, expected " + std::to_string(out.dim) + " as on the first row");
      ++out.rows;
      c.next_line();
    }
  });
  return out;
}

std::string ogb_split_dir(const std::string& dir, const ReadOptions& options) {
  std::error_code ec;
  const fs::path split_root = fs::path(dir) / "split";
  if (!fs::is_directory(split_root, ec)) return {};
  std::string name = options.ogb_split;
  if (name.empty()) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(split_root))
      if (e.is_directory()) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    if (names.size() > 1) {
      std::string list;
      for (const auto& s : names) list += (list.empty() ? "" : ", ") + s;
      throw InputError(split_root.string(), "", "holds several splits (" + list + "); choose one with --ogb-split");
    }
    if (names.empty()) return {};
    name = names[0];
  }
  const std::string sdir = (split_root / name).string();
  if (!fs::is_directory(sdir, ec)) throw InputError(sdir, "", "no such split folder");
  return sdir;
}

std::vector<NodeId> read_ogb_split_ids(const std::string& sdir, const char* file, NodeId first, std::int64_t n) {
  const std::string p = require_ogb_file(sdir, file);
  auto idx = read_int_column(p, "a node id");
  for (std::size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= n)
      throw InputError(p, "value " + std::to_string(i + 1), "node id " + std::to_string(idx[i]) + " out of range [0, " + std::to_string(n) + ")");
    idx[i] += first;
  }
  return idx;
}

Dataset read_ogb_dataset(const std::string& dir, const ReadOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "", "expected an OGB dataset folder (raw/, split/)");
  // The heterogeneous layout (ogbn-mag): node counts per type, a folder per relation.
  if (!ogb_file(dir, "raw/num-node-dict").empty()) return read_ogb_hetero_dataset(dir, options);
  if (options.add_reverse) throw InputError(dir, "", "--add-reverse applies to typed inputs (OGB's heterogeneous layout, IGB-Het); this folder holds one node type");
  if (options.relation_ids) throw InputError(dir, "", "--relation-ids applies to typed inputs (OGB's heterogeneous layout, IGB-Het); this folder holds one node type");
  Dataset ds;
  ds.name = options.name.empty() ? default_name(dir) : options.name;
  ds.source = dir + " (ogb)";

  // Node count: raw/num-node-list when present, else the node-feature / label rows, else the ids.
  std::int64_t n = -1;
  if (std::string p = ogb_file(dir, "raw/num-node-list"); !p.empty()) {
    auto v = read_int_column(p, "the number of nodes");
    if (v.size() != 1) throw InputError(p, at_line(1), "expected exactly one node count (a single graph), found " + std::to_string(v.size()) + " values");
    if (v[0] < 0) throw InputError(p, at_line(1), "negative node count " + std::to_string(v[0]));
    n = v[0];
  }

  // Features: F comma-separated floats per line, F fixed by the first line.
  FeatureCsv feats;
  if (std::string p = ogb_file(dir, "raw/node-feat"); !p.empty()) {
    feats = read_feature_csv(p);
    if (n < 0) n = feats.rows;
    if (feats.rows != n) throw InputError(p, "end of file", std::to_string(feats.rows) + " feature rows, expected one per node (" + std::to_string(n) + ")");
  }

  std::vector<std::int64_t> labels;
  std::string label_path = ogb_file(dir, "raw/node-label");
  if (!label_path.empty()) {
    const std::int64_t unlabelled = -1;
    labels = read_int_column(label_path, "an integer class label", &unlabelled);
    if (n < 0) n = static_cast<std::int64_t>(labels.size());
    if (static_cast<std::int64_t>(labels.size()) != n)
      throw InputError(label_path, "end of file", std::to_string(labels.size()) + " labels, expected one per node (" + std::to_string(n) + ")");
  }

  const std::string edge_path = require_ogb_file(dir, "raw/edge");
  RawEdges raw = parse_edge_file(edge_path, n >= 0 ? n : std::numeric_limits<std::int64_t>::max());
  if (raw.bytes == 0) throw InputError(edge_path, at_line(1), "empty file, expected lines 'source,target'");
  if (n < 0) {
    n = 0;
    for (auto v : raw.src) n = std::max(n, v + 1);
    for (auto v : raw.dst) n = std::max(n, v + 1);
  }
  EdgeList el;
  el.num_nodes = n;
  el.src = std::move(raw.src);
  el.dst = std::move(raw.dst);
  BuiltGraph built = build_csr(std::move(el), options.clean);
  ds.graph = std::move(built.graph);
  ds.cleaning = built.report;
  if (feats.dim > 0) {
    ds.feature_dim = feats.dim;
    ds.features = Array<float>(std::move(feats.values));
  }
  if (!labels.empty()) set_labels(ds, std::move(labels), label_path, "line ", 1);

  // Split: split/<name>/{train,valid,test}.csv.gz
  if (const std::string sdir = ogb_split_dir(dir, options); !sdir.empty()) {
    ds.train_idx = Array<NodeId>(read_ogb_split_ids(sdir, "train", 0, n));
    ds.val_idx = Array<NodeId>(read_ogb_split_ids(sdir, "valid", 0, n));
    ds.test_idx = Array<NodeId>(read_ogb_split_ids(sdir, "test", 0, n));
  }
  return ds;
}

}  // namespace shardgnn
