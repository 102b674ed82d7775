#include "partition/report.hpp"

#include <algorithm>
#include <cstdio>

namespace shardgnn {

namespace render {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pad(const std::string& s, std::size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }

// A qualitative palette (Tableau 10); cycles beyond ten.
const char* const kColors[10] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') o += '?';  // not allowed in XML 1.0
    else o += c;
  }
  return o;
}

}  // namespace render

namespace {

using render::fmt;
using render::kColors;
using render::pad;
using render::xml_escape;

std::string num(std::int64_t v) { return std::to_string(v); }

}  // namespace

std::string render_report_table(const PartitionInfo& info) {
  const PartitionMetrics& m = info.metrics;
  std::string out;
  out += "partitioned dataset  " + info.dir + "\n";
  out += "source               " + info.dataset.name + " (" + num(info.dataset.num_nodes) + " nodes, " + num(info.dataset.num_edges) + " directed edges)\n";
  out += "method               " + info.method + ", " + num(m.parts) + " parts\n";
  out += "edge cut             " + num(m.edge_cut) + "\n";
  out += "comm volume          " + num(m.comm_volume) + "\n";
  out += "halo factor          " + fmt("%.3f", m.halo_factor) + "  ((owned + halo) / nodes)\n";
  out += "imbalance max/mean   nodes " + fmt("%.3f", m.nodes.ratio()) + ", edges " + fmt("%.3f", m.edges.ratio()) + ", train " +
         fmt("%.3f", m.train.ratio()) + ", val " + fmt("%.3f", m.val.ratio()) + ", test " + fmt("%.3f", m.test.ratio()) + "\n";
  if (m.has_cost) {
    std::string fanouts;
    for (int f : m.cost_fanouts) fanouts += (fanouts.empty() ? "" : ",") + std::to_string(f);
    out += "expected cost        max/mean " + fmt("%.3f", m.cost.ratio()) + "  (sampled edges + " + fmt("%g", m.cost_remote_weight) +
           " x remote rows per training node, fanouts " + fanouts + ")\n";
  }
  if (info.dataset.num_classes > 0)
    out += "label entropy        global " + fmt("%.3f", m.global_label_entropy) + " bits, shards' mean " + fmt("%.3f", m.mean_label_entropy) +
           " bits, max KL " + fmt("%.4f", m.max_label_kl) + " bits\n";
  out += "\n";
  std::vector<std::pair<std::string, std::size_t>> cols = {{"part", 5}, {"nodes", 11}, {"edges", 13}, {"train", 9}, {"val", 8},
                                                           {"test", 8}, {"halo", 10}, {"halo %", 8}, {"H(labels)", 10}, {"KL", 8}};
  if (m.has_cost) cols.emplace_back("cost", 14);
  for (const auto& [name, w] : cols) out += pad(name, w);
  out += "\n";
  for (std::size_t k = 0; k < m.shards.size(); ++k) {
    const ShardMetrics& s = m.shards[k];
    const double halo_pct = s.nodes > 0 ? 100.0 * static_cast<double>(s.halo) / static_cast<double>(s.nodes + s.halo) : 0.0;
    out += pad(num(static_cast<std::int64_t>(k)), 5) + pad(num(s.nodes), 11) + pad(num(s.edges), 13) + pad(num(s.train), 9) + pad(num(s.val), 8) +
           pad(num(s.test), 8) + pad(num(s.halo), 10) + pad(fmt("%.1f", halo_pct), 8) + pad(fmt("%.3f", s.label_entropy), 10) +
           pad(fmt("%.4f", s.label_kl), 8) + (m.has_cost ? pad(num(s.cost), 14) : "") + "\n";
  }
  if (info.dataset.schema.typed()) out += render_type_table(info);
  return out;
}

std::string render_type_table(const PartitionInfo& info) {
  // Per node type: each part's owned nodes and halo, and the owned nodes' max/mean (what
  // --balance ntypes bounds by --imbalance).
  const GraphSchema& s = info.dataset.schema;
  std::string out = "\n" + pad("part", 5);
  for (const NodeType& t : s.types()) out += pad(t.name, 12) + pad("halo", 10);
  out += "\n";
  std::vector<std::int64_t> most(static_cast<std::size_t>(s.num_types()), 0);
  for (std::size_t k = 0; k < info.parts.size(); ++k) {
    const PartEntry& e = info.parts[k];
    out += pad(num(static_cast<std::int64_t>(k)), 5);
    for (std::size_t t = 0; t < e.type_nodes.size(); ++t) {
      out += pad(num(e.type_nodes[t]), 12) + pad(num(e.type_halo[t]), 10);
      most[t] = std::max(most[t], e.type_nodes[t]);
    }
    out += "\n";
  }
  out += "type imbalance max/mean";
  for (int t = 0; t < s.num_types(); ++t) {
    const double mean = static_cast<double>(s.types()[static_cast<std::size_t>(t)].count) / static_cast<double>(std::max<std::size_t>(1, info.parts.size()));
    out += std::string(t == 0 ? "  " : ", ") + s.types()[static_cast<std::size_t>(t)].name + " " +
           fmt("%.3f", mean > 0 ? static_cast<double>(most[static_cast<std::size_t>(t)]) / mean : 0.0);
  }
  out += "\n";
  if (s.relation_ids())
    out += "relation ids      one per edge (edge_relations.npy), " + num(static_cast<std::int64_t>(s.relations().size())) +
           " relations; the partitioner cut the graph with one entry per neighbour\n";
  return out;
}

std::string render_report_svg(const PartitionInfo& info) {
  const PartitionMetrics& m = info.metrics;
  const int K = std::max(1, m.parts);
  // Four panels side by side: nodes, training nodes, halo fraction, label mix.
  const double panel_w = 260, panel_h = std::max(120.0, 22.0 * K + 40), gap = 30, left = 40, top = 70;
  const double width = left + 4 * (panel_w + gap), height = top + panel_h + 60;
  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", width) + "\" height=\"" + fmt("%.0f", height) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt("%.0f", left) + "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">" +
       xml_escape(info.dataset.name + ": " + info.method + ", " + std::to_string(m.parts) + " parts") + "</text>\n";
  s += "<text x=\"" + fmt("%.0f", left) + "\" y=\"44\">" +
       xml_escape("edge cut " + num(m.edge_cut) + ", comm volume " + num(m.comm_volume) + ", halo factor " + fmt("%.3f", m.halo_factor) +
                  ", node imbalance " + fmt("%.3f", m.nodes.ratio()) + ", train imbalance " + fmt("%.3f", m.train.ratio())) +
       "</text>\n";
  const double bar_h = (panel_h - 30) / K;
  auto panel = [&](int idx, const std::string& title, auto value_of, double max_value, auto label_of) {
    const double x0 = left + idx * (panel_w + gap);
    s += "<text x=\"" + fmt("%.0f", x0) + "\" y=\"" + fmt("%.0f", top - 8) + "\" font-weight=\"bold\">" + xml_escape(title) + "</text>\n";
    for (int k = 0; k < K && k < static_cast<int>(m.shards.size()); ++k) {
      const double v = value_of(m.shards[k]);
      const double w = max_value > 0 ? (panel_w - 70) * v / max_value : 0;
      const double y = top + k * bar_h;
      s += "<text x=\"" + fmt("%.0f", x0 - 4) + "\" y=\"" + fmt("%.1f", y + bar_h * 0.7) + "\" text-anchor=\"end\">" + std::to_string(k) + "</text>\n";
      s += "<rect x=\"" + fmt("%.1f", x0) + "\" y=\"" + fmt("%.1f", y + 2) + "\" width=\"" + fmt("%.1f", w) + "\" height=\"" +
           fmt("%.1f", bar_h - 4) + "\" fill=\"#4e79a7\"/>\n";
      s += "<text x=\"" + fmt("%.1f", x0 + w + 4) + "\" y=\"" + fmt("%.1f", y + bar_h * 0.7) + "\">" + xml_escape(label_of(m.shards[k])) + "</text>\n";
    }
  };
  double max_nodes = 0, max_train = 0;
  for (const auto& sh : m.shards) {
    max_nodes = std::max(max_nodes, static_cast<double>(sh.nodes));
    max_train = std::max(max_train, static_cast<double>(sh.train));
  }
  auto halo_frac = [](const ShardMetrics& sh) { return sh.nodes + sh.halo > 0 ? static_cast<double>(sh.halo) / static_cast<double>(sh.nodes + sh.halo) : 0.0; };
  panel(0, "owned nodes", [](const ShardMetrics& sh) { return static_cast<double>(sh.nodes); }, max_nodes, [](const ShardMetrics& sh) { return num(sh.nodes); });
  panel(1, "training nodes", [](const ShardMetrics& sh) { return static_cast<double>(sh.train); }, max_train, [](const ShardMetrics& sh) { return num(sh.train); });
  panel(2, "halo fraction (halo / (owned + halo))", halo_frac, 1.0, [&](const ShardMetrics& sh) { return fmt("%.1f%%", 100 * halo_frac(sh)); });
  // Label mix: one stacked bar per shard, class shares of its labelled nodes.
  const double x0 = left + 3 * (panel_w + gap);
  s += "<text x=\"" + fmt("%.0f", x0) + "\" y=\"" + fmt("%.0f", top - 8) + "\" font-weight=\"bold\">label mix (entropy, bits)</text>\n";
  for (int k = 0; k < K && k < static_cast<int>(m.shards.size()); ++k) {
    const ShardMetrics& sh = m.shards[k];
    double total = 0;
    for (auto c : sh.label_counts) total += static_cast<double>(c);
    double x = x0;
    const double y = top + k * bar_h;
    for (std::size_t c = 0; c < sh.label_counts.size() && total > 0; ++c) {
      const double w = (panel_w - 70) * static_cast<double>(sh.label_counts[c]) / total;
      s += "<rect x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y + 2) + "\" width=\"" + fmt("%.2f", w) + "\" height=\"" + fmt("%.1f", bar_h - 4) +
           "\" fill=\"" + kColors[c % 10] + "\"><title>class " + std::to_string(c) + ": " + num(sh.label_counts[c]) + "</title></rect>\n";
      x += w;
    }
    s += "<text x=\"" + fmt("%.1f", x0 + panel_w - 66) + "\" y=\"" + fmt("%.1f", y + bar_h * 0.7) + "\">" + (total > 0 ? fmt("%.2f", sh.label_entropy) : "no labels") + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace shardgnn
