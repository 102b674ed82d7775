#include "datasets/writers.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/npy.hpp"

namespace shardgnn {

namespace {

// Buffered integer text output.
class TextOut {
 public:
  TextOut(std::FILE* f, const std::string& path) : f_(f), path_(path) { buf_.reserve(kSize + 64); }
  ~TextOut() = default;
  void num(std::int64_t v) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
    if (buf_.size() >= kSize) flush();
  }
  void ch(char c) { buf_.push_back(c); }
  void str(const std::string& s) { buf_ += s; }
  void flush() {
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) throw InputError(path_, "", "write failed (disk full?)");
    buf_.clear();
  }

 private:
  static constexpr std::size_t kSize = 1 << 20;
  std::FILE* f_;
  const std::string& path_;
  std::string buf_;
};

}  // namespace

void write_metis_graph(const Dataset& ds, const std::string& path) {
  ds.graph.visit([&](const auto& g) {
  const NodeId n = g.num_nodes();
  for (NodeId u = 0; u < n; ++u) {
    const auto nb = g.neighbors(u);
    for (std::size_t i = 0; i < nb.size(); ++i) {
      const NodeId v = nb[i];
      const char* why = v == u ? "has a self-loop" : (i > 0 && nb[i - 1] == v) ? "has a duplicate edge" : nullptr;
      if (!why) {
        const auto back = g.neighbors(v);
        if (!std::binary_search(back.begin(), back.end(), u)) why = "has an edge without its reverse (not symmetric)";
      }
      if (why)
        throw InputError("dataset '" + ds.name + "': node " + std::to_string(u) + " " + why +
                         "; METIS needs a simple undirected graph (convert with --symmetrize --drop-self-loops --drop-duplicates)");
    }
  }
  const bool ew = !ds.edge_weights.empty(), vw = ds.node_weight_dim > 0;
  write_file_atomic(path, [&](std::FILE* f) {
    TextOut out(f, path);
    out.num(n);
    out.ch(' ');
    out.num(g.num_edges() / 2);
    if (ew || vw) {
      out.str(std::string(" 0") + (vw ? "1" : "0") + (ew ? "1" : "0"));
      if (vw) {
        out.ch(' ');
        out.num(ds.node_weight_dim);
      }
    }
    out.ch('\n');
    for (NodeId u = 0; u < n; ++u) {
      bool first = true;
      auto sep = [&] { if (!first) out.ch(' '); first = false; };
      for (std::int64_t c = 0; vw && c < ds.node_weight_dim; ++c) {
        sep();
        out.num(ds.node_weights[u * ds.node_weight_dim + c]);
      }
      for (EdgeId e = g.indptr()[u]; e < g.indptr()[u + 1]; ++e) {
        sep();
        out.num(g.indices()[e] + 1);
        if (ew) {
          out.ch(' ');
          out.num(ds.edge_weights[e]);
        }
      }
      out.ch('\n');
    }
    out.flush();
  });
  });
}

void write_edge_list_file(const Dataset& ds, const std::string& path) {
  ds.graph.visit([&](const auto& g) {
  auto id = [&](NodeId v) { return ds.node_ids.empty() ? v : ds.node_ids[v]; };
  write_file_atomic(path, [&](std::FILE* f) {
    TextOut out(f, path);
    for (NodeId u = 0; u < g.num_nodes(); ++u)
      for (NodeId v : g.neighbors(u)) {
        out.num(id(u));
        out.ch('\t');
        out.num(id(v));
        out.ch('\n');
      }
    out.flush();
  });
  });
}

void write_igbh_layout(const Dataset& ds, const std::string& dir) {
  const GraphSchema& s = ds.schema;
  if (!s.typed()) throw InputError(dir, "", "the IGB-Het layout is for typed graphs; this dataset has one node type");
  write_dir_atomic(dir, false, [&](const std::string& tmp) {
    const std::string root = tmp + "/processed";
    for (int t = 0; t < s.num_types(); ++t) {
      const NodeType& nt = s.types()[static_cast<std::size_t>(t)];
      const std::string tdir = root + "/" + nt.name;
      std::filesystem::create_directories(tdir);
      write_npy_streamed(tdir + "/node_feat.npy", DType::kFloat32, std::vector<std::int64_t>{nt.count, nt.feature_dim}, [&](const NpySink& out) {
        std::vector<float> row(static_cast<std::size_t>(nt.feature_dim));
        for (std::int64_t i = 0; i < nt.count && nt.feature_dim > 0; ++i) out(ds.type_row_f32(t, i, row.data()), row.size() * sizeof(float));
      });
      bool labelled = false;
      std::vector<std::int64_t> labels(static_cast<std::size_t>(nt.count), -1);
      for (std::int64_t i = 0; i < nt.count; ++i)
        for_each_label(ds, s.begin(t) + i, [&](std::int64_t c) { labels[static_cast<std::size_t>(i)] = c, labelled = true; });
      if (labelled && !ds.multilabel) write_npy(tdir + "/node_label_" + std::to_string(ds.num_classes) + ".npy", std::span<const std::int64_t>(labels));
    }
    std::vector<std::vector<std::int64_t>> pairs(s.relations().size());
    ds.graph.visit([&](const auto& g) {
      for (NodeId u = 0; u < g.num_nodes(); ++u) {
        const int tu = s.type_of(u);
        EdgeId e = g.indptr()[static_cast<std::size_t>(u)];
        for (const auto v : g.neighbors(u)) {
          const int tv = s.type_of(static_cast<NodeId>(v));
          // The stored relation, else the one joining the two types.
          const auto r = s.relation_ids() ? ds.edge_relations[static_cast<std::size_t>(e)] : s.relation_between(tu, tv);
          ++e;
          auto& p = pairs[static_cast<std::size_t>(r)];
          p.push_back(u - s.begin(tu));
          p.push_back(static_cast<NodeId>(v) - s.begin(tv));
        }
      }
    });
    for (std::size_t r = 0; r < pairs.size(); ++r) {
      const std::string rdir = root + "/" + s.relation_label(static_cast<int>(r));
      std::filesystem::create_directories(rdir);
      write_npy(rdir + "/edge_index.npy", DType::kInt64, pairs[r].data(), std::vector<std::int64_t>{static_cast<std::int64_t>(pairs[r].size() / 2), 2});
    }
  });
}

}  // namespace shardgnn
