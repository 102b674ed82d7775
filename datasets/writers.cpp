#include "datasets/writers.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <vector>

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"

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

}  // namespace shardgnn
