#include "partition/metrics.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "datasets/error.hpp"
#include "datasets/json_util.hpp"
#include "partition/cost.hpp"
#include "partition/parallel.hpp"

namespace shardgnn {

double entropy_bits(std::span<const std::int64_t> counts) {
  double total = 0;
  for (auto c : counts) total += static_cast<double>(c);
  if (total <= 0) return 0;
  double h = 0;
  for (auto c : counts)
    if (c > 0) {
      const double p = static_cast<double>(c) / total;
      h -= p * std::log2(p);
    }
  return h;
}

double kl_bits(std::span<const std::int64_t> p, std::span<const std::int64_t> q) {
  double tp = 0, tq = 0;
  for (auto c : p) tp += static_cast<double>(c);
  for (auto c : q) tq += static_cast<double>(c);
  if (tp <= 0 || tq <= 0) return 0;
  // Add-half smoothing on q only: a class the shard has but the whole graph lacks cannot happen,
  // the smoothing just keeps the formula finite.
  const double k = static_cast<double>(q.size());
  double kl = 0;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) {
      const double pi = static_cast<double>(p[i]) / tp;
      const double qi = (static_cast<double>(q[i]) + 0.5) / (tq + 0.5 * k);
      kl += pi * std::log2(pi / qi);
    }
  return std::max(0.0, kl);
}

namespace {

Imbalance imbalance_of(const std::vector<ShardMetrics>& shards, std::int64_t ShardMetrics::*field) {
  Imbalance im;
  double sum = 0;
  for (const auto& s : shards) {
    im.max = std::max(im.max, static_cast<double>(s.*field));
    sum += static_cast<double>(s.*field);
  }
  im.mean = shards.empty() ? 0 : sum / static_cast<double>(shards.size());
  return im;
}

}  // namespace

PartitionMetrics compute_metrics(const Dataset& ds, std::span<const PartId> part, int parts) {
  PartitionConfig cfg;
  cfg.parts = parts;
  return compute_metrics(ds, part, cfg);
}

PartitionMetrics compute_metrics(const Dataset& ds, std::span<const PartId> part, const PartitionConfig& cfg) {
  const int parts = cfg.parts;
  const CsrGraph& g = ds.graph;
  const std::int64_t n = ds.num_nodes();
  std::vector<std::vector<NodeId>> members(static_cast<std::size_t>(parts));
  for (NodeId v = 0; v < n; ++v) members[part[v]].push_back(v);
  std::vector<ShardTally> tallies(static_cast<std::size_t>(parts));
  // Shards are measured independently, one thread per core. The halo is counted in a bitmap (it
  // stays in cache where a stamp per node did not), read and cleared once per shard: n/8 bytes
  // per thread, and n/64 words read per shard, less than the shard's rows unless K exceeds ~64x
  // the mean degree.
  for_each_part_parallel(
      parts, [&] { return std::vector<std::uint64_t>(static_cast<std::size_t>(n + 63) / 64); },
      [&](PartId k, std::vector<std::uint64_t>& remote) {
        RowTally rows(ds, k, parts);  // counted here, stored once: the tallies share cache lines between threads
        std::uint64_t* bits = remote.data();
        const PartId* const owner = part.data();  // a local: the loop keeps it in a register
        g.visit([&](const auto& view) {
          for (NodeId u : members[k]) {
            const auto nb = view.neighbors(u);
            rows.begin_row(u);
            for (std::size_t i = 0; i < nb.size(); ++i) {
              if (i + 8 < nb.size()) __builtin_prefetch(owner + nb[i + 8]);  // random reads: ahead
              const NodeId v = nb[i];
              const PartId pv = owner[v];
              bits[v >> 6] |= static_cast<std::uint64_t>(pv != k) << (v & 63);
              rows.entry(v, pv);
            }
            rows.end_row();
          }
        });
        for (auto& word : remote) {
          rows.tally.halo += std::popcount(word);
          word = 0;
        }
        tallies[static_cast<std::size_t>(k)] = rows.tally;
      });
  return metrics_from_tallies(ds, part, cfg, tallies);
}

PartitionMetrics metrics_from_tallies(const Dataset& ds, std::span<const PartId> part, const PartitionConfig& cfg,
                                      std::span<const ShardTally> tallies) {
  const int parts = cfg.parts;
  const std::int64_t n = ds.num_nodes();
  if (static_cast<std::int64_t>(tallies.size()) != parts || static_cast<std::int64_t>(part.size()) != n)
    throw std::logic_error("metrics_from_tallies: a tally per part and a part per node expected");
  PartitionMetrics m;
  m.parts = parts;
  m.shards.assign(static_cast<std::size_t>(parts), ShardMetrics{});
  for (auto& s : m.shards) s.label_counts.assign(static_cast<std::size_t>(ds.num_classes), 0);
  std::vector<std::int64_t> global_labels(static_cast<std::size_t>(ds.num_classes), 0);
  for (NodeId v = 0; v < n; ++v) {
    ShardMetrics& s = m.shards[part[v]];
    s.nodes += 1;
    s.edges += ds.graph.degree(v);
    for_each_label(ds, v, [&](std::int64_t c) {
      s.label_counts[static_cast<std::size_t>(c)] += 1;
      global_labels[static_cast<std::size_t>(c)] += 1;
    });
  }
  std::int64_t from_entries = 0;
  for (PartId k = 0; k < parts; ++k) {
    const ShardTally& t = tallies[static_cast<std::size_t>(k)];
    if (t.pairs_from_entries != tallies[0].pairs_from_entries) throw std::logic_error("metrics_from_tallies: tallies counted pairs two ways");
    m.shards[k].cut_entries = t.cut_entries;
    m.shards[k].halo = t.halo;
    m.edge_cut += t.edge_cut;
    if (t.pairs_from_entries) from_entries += t.cut_entries;
    m.comm_volume += t.comm_volume;
  }
  m.edge_cut += from_entries / 2;  // each cut pair of such a graph is two cut entries
  for (NodeId v : ds.train_idx) m.shards[part[v]].train += 1;
  for (NodeId v : ds.val_idx) m.shards[part[v]].val += 1;
  for (NodeId v : ds.test_idx) m.shards[part[v]].test += 1;

  std::int64_t replicated = n;
  for (const auto& s : m.shards) replicated += s.halo;
  m.halo_factor = n > 0 ? static_cast<double>(replicated) / static_cast<double>(n) : 1.0;
  m.global_label_entropy = entropy_bits(global_labels);
  double weighted = 0, labelled = 0;
  for (auto& s : m.shards) {
    s.label_entropy = entropy_bits(s.label_counts);
    s.label_kl = kl_bits(s.label_counts, global_labels);
    double ls = 0;
    for (auto c : s.label_counts) ls += static_cast<double>(c);
    weighted += ls * s.label_entropy;
    labelled += ls;
    m.max_label_kl = std::max(m.max_label_kl, s.label_kl);
  }
  m.mean_label_entropy = labelled > 0 ? weighted / labelled : 0;
  m.nodes = imbalance_of(m.shards, &ShardMetrics::nodes);
  m.edges = imbalance_of(m.shards, &ShardMetrics::edges);
  m.train = imbalance_of(m.shards, &ShardMetrics::train);
  m.val = imbalance_of(m.shards, &ShardMetrics::val);
  m.test = imbalance_of(m.shards, &ShardMetrics::test);
  if (!ds.train_idx.empty()) {
    const std::vector<std::int64_t> w = node_cost_weights(ds, cfg.cost_fanouts, cfg.cost_remote_weight, part);
    for (NodeId v : ds.train_idx) m.shards[part[v]].cost += w[static_cast<std::size_t>(v)];
    m.has_cost = true;
    m.cost = imbalance_of(m.shards, &ShardMetrics::cost);
    m.cost_fanouts = cfg.cost_fanouts;
    m.cost_remote_weight = cfg.cost_remote_weight;
  }
  return m;
}

namespace {

boost::json::object imbalance_json(const Imbalance& im) { return {{"max", im.max}, {"mean", im.mean}, {"max_over_mean", im.ratio()}}; }

Imbalance imbalance_from(const boost::json::object& o, const char* key) {
  const auto& x = json_object(o, key);
  Imbalance im;
  im.max = x.at("max").to_number<double>();
  im.mean = x.at("mean").to_number<double>();
  return im;
}

}  // namespace

boost::json::object metrics_to_json(const PartitionMetrics& m) {
  boost::json::array shards;
  for (const auto& s : m.shards) {
    boost::json::array labels;
    for (auto c : s.label_counts) labels.push_back(c);
    shards.push_back(boost::json::object{{"nodes", s.nodes}, {"edges", s.edges}, {"train", s.train}, {"val", s.val}, {"test", s.test},
                                         {"halo", s.halo}, {"cut_entries", s.cut_entries}, {"label_counts", labels},
                                         {"label_entropy_bits", s.label_entropy}, {"label_kl_bits", s.label_kl}});
    if (m.has_cost) shards.back().as_object()["expected_cost"] = s.cost;
  }
  boost::json::object imbalance{{"nodes", imbalance_json(m.nodes)}, {"edges", imbalance_json(m.edges)}, {"train", imbalance_json(m.train)},
                                {"val", imbalance_json(m.val)}, {"test", imbalance_json(m.test)}};
  if (m.has_cost) imbalance["expected_cost"] = imbalance_json(m.cost);
  boost::json::object o{{"parts", m.parts},
          {"edge_cut", m.edge_cut},
          {"comm_volume", m.comm_volume},
          {"halo_factor", m.halo_factor},
          {"global_label_entropy_bits", m.global_label_entropy},
          {"mean_label_entropy_bits", m.mean_label_entropy},
          {"max_label_kl_bits", m.max_label_kl},
          {"imbalance", std::move(imbalance)},
          {"shards", shards}};
  if (m.has_cost) {
    boost::json::array fanouts;
    for (int f : m.cost_fanouts) fanouts.push_back(f);
    o["cost_model"] = {{"fanouts", fanouts}, {"remote_weight", m.cost_remote_weight}};
  }
  return o;
}

void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const PartitionMetrics& m) { v = metrics_to_json(m); }

PartitionMetrics tag_invoke(boost::json::value_to_tag<PartitionMetrics>, const boost::json::value& v) {
  if (!v.is_object()) throw InputError("key 'metrics': missing, expected an object");
  const boost::json::object& o = v.get_object();
  PartitionMetrics m;
  try {
    m.parts = static_cast<int>(json_int(o, "parts"));
    m.edge_cut = json_int(o, "edge_cut");
    m.comm_volume = json_int(o, "comm_volume");
    m.halo_factor = o.at("halo_factor").to_number<double>();
    m.global_label_entropy = o.at("global_label_entropy_bits").to_number<double>();
    m.mean_label_entropy = o.at("mean_label_entropy_bits").to_number<double>();
    m.max_label_kl = o.at("max_label_kl_bits").to_number<double>();
    const auto& im = json_object(o, "imbalance");
    m.nodes = imbalance_from(im, "nodes");
    m.edges = imbalance_from(im, "edges");
    m.train = imbalance_from(im, "train");
    m.val = imbalance_from(im, "val");
    m.test = imbalance_from(im, "test");
    // Absent from files written before the cost model: such files read back without cost.
    m.has_cost = im.contains("expected_cost");
    if (m.has_cost) {
      m.cost = imbalance_from(im, "expected_cost");
      const auto& cm = json_object(o, "cost_model");
      for (const auto& f : cm.at("fanouts").as_array()) m.cost_fanouts.push_back(static_cast<int>(f.to_number<std::int64_t>()));
      m.cost_remote_weight = cm.at("remote_weight").to_number<double>();
    }
    for (const auto& shard : o.at("shards").as_array()) {
      const auto& so = shard.as_object();
      ShardMetrics s;
      s.nodes = json_int(so, "nodes");
      s.edges = json_int(so, "edges");
      s.train = json_int(so, "train");
      s.val = json_int(so, "val");
      s.test = json_int(so, "test");
      s.halo = json_int(so, "halo");
      s.cut_entries = json_int(so, "cut_entries");
      for (const auto& c : so.at("label_counts").as_array()) s.label_counts.push_back(c.to_number<std::int64_t>());
      s.label_entropy = so.at("label_entropy_bits").to_number<double>();
      s.label_kl = so.at("label_kl_bits").to_number<double>();
      if (m.has_cost) s.cost = json_int(so, "expected_cost");
      m.shards.push_back(std::move(s));
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(std::string("key 'metrics': malformed: ") + e.what());
  }
  return m;
}

}  // namespace shardgnn
