#include "trainer/evaluate.hpp"

#include "datasets/error.hpp"

#include <algorithm>

#include "sampler/halo.hpp"
#include "sampler/pipeline.hpp"

namespace shardgnn {

namespace {

// Puts the model in eval mode (no dropout) for a scope, and back as it was.
class EvalScope {
 public:
  explicit EvalScope(torch::nn::Module& m) : m_(m), was_training_(m.is_training()) { m_.eval(); }
  ~EvalScope() { m_.train(was_training_); }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  torch::nn::Module& m_;
  bool was_training_;
  torch::NoGradGuard no_grad_;
};

// The model's output for a batch's seeds, added to `metrics` (which splits the schedule's entries
// into validation and test).
void score_batch(Gnn& model, const KeptBatch& kb, const torch::Device& device, TaskMetrics& metrics) {
  const BatchTensors t = to_tensors(kb.mb, device);
  metrics.add_batch(kb.aggregated.defined() ? model->forward_aggregated(t.blocks, kb.aggregated) : model->forward(t), kb.mb);
}

// A batch to keep: its first layer's sums where the model has them (GraphSAGE, GCN, GIN first),
// its features released.
KeptBatch keepable(Gnn& model, MiniBatch mb, const torch::Device& device) {
  KeptBatch kb;
  if (model->aggregates_input() && !mb.blocks.empty()) {
    const BatchTensors t = to_tensors(mb, device);
    kb.aggregated = model->aggregate_input(t.blocks.front(), t.x);  // a new tensor: the features may go
    FeatureRows().swap(mb.features);
  }
  kb.mb = std::move(mb);
  return kb;
}

}  // namespace

std::size_t batch_bytes(const KeptBatch& kb) {
  const MiniBatch& mb = kb.mb;
  // Feature buffers come from the huge-page pool, which may hand out up to twice the request.
  std::size_t n = 2 * sizeof(float) * mb.features.size() + sizeof(std::int64_t) * (target_values(mb.targets).size() + mb.degrees.size());
  if (kb.aggregated.defined()) n += static_cast<std::size_t>(kb.aggregated.numel() * kb.aggregated.element_size());
  for (const auto& nodes : mb.layer_nodes) n += sizeof(NodeId) * nodes.size();
  for (std::size_t t = 0; t < mb.type_at.size(); ++t)
    n += 2 * sizeof(float) * mb.type_features[t].size() + sizeof(std::int64_t) * (mb.type_at[t].size() + mb.type_ids[t].size());
  n += sizeof(std::int64_t) * mb.node_types.size();
  for (const Block& b : mb.blocks) n += sizeof(std::int64_t) * (b.indptr.size() + b.indices.size());
  return n;
}

SplitMetrics evaluate_sampled(const Task& task, Gnn& model, DistSampler& sampler, FeatureStore& features, const torch::Device& device,
                              std::span<const NodeId> val_nodes, std::span<const NodeId> test_nodes, std::vector<KeptBatch>* keep, std::size_t keep_bytes) {
  EvalScope scope(*model);
  std::vector<NodeId> seeds(val_nodes.begin(), val_nodes.end());
  const std::size_t n_val = seeds.size();
  seeds.insert(seeds.end(), test_nodes.begin(), test_nodes.end());
  const auto batches = sampler.eval_batches(seeds);
  const std::unique_ptr<TaskMetrics> metrics = task.make_metrics(n_val);
  std::size_t kept = 0;
  if (keep) keep->clear();
  bool keeping = keep != nullptr;
  for (std::size_t step = 0; step < batches.size(); ++step) {
    MiniBatch mb = produce_batch(sampler, features, batches[step], kEvalEpoch, static_cast<std::int64_t>(step));
    if (mb.seeds().empty()) {
      model->skip_batch();  // the embedding tables' collectives of a forward
      continue;
    }
    // A batch to keep is scored as it will be later, so that every validation gives the same.
    KeptBatch kb = keeping ? keepable(model, std::move(mb), device) : KeptBatch{std::move(mb), {}};
    score_batch(model, kb, device, *metrics);
    if (keeping) {
      kept += batch_bytes(kb);
      keeping = kept <= keep_bytes;
      if (keeping) keep->push_back(std::move(kb));
      else keep->clear();
    }
  }
  return metrics->reduce(sampler.comm());
}

SplitMetrics evaluate_kept(const Task& task, Gnn& model, const std::vector<KeptBatch>& val_batches, const torch::Device& device,
                           const comm::Communicator& comm) {
  EvalScope scope(*model);
  const std::unique_ptr<TaskMetrics> metrics = task.make_metrics(SIZE_MAX);  // kept batches are validation batches
  for (const KeptBatch& kb : val_batches) score_batch(model, kb, device, *metrics);
  return metrics->reduce(comm);
}

namespace {

// The block of dst rows [a, b) of a table (owned rows, then halo rows), whose in-edges are entries
// e0 .. e1 of the rows' CSR (`indptr`, and `nbr` for each entry's table row), and its src rows'
// positions in the table: the dst rows themselves first (the dst prefix), then every other
// neighbour once. Tensor ops on the device, with no loop over nodes on the host and no sort:
// `slot` (one per table row, -1 outside a call) numbers the block's src rows while it is cut.
std::pair<BlockTensors, torch::Tensor> cut_block(const torch::Tensor& indptr, const torch::Tensor& nbr, torch::Tensor& slot, NodeId a, NodeId b, EdgeId e0,
                                                 EdgeId e1) {
  const torch::Tensor p = nbr.slice(0, e0, e1);
  const torch::Tensor dst_rows = torch::arange(a, b, p.options());
  slot.slice(0, a, b).copy_(dst_rows - a);
  const torch::Tensor others = p.masked_select(slot.index_select(0, p).lt(0));
  // Each distinct neighbour once: of the entries that name it, the one whose write lands.
  const torch::Tensor order = torch::arange(others.size(0), p.options());
  slot.index_put_({others}, order);
  const torch::Tensor fresh = others.masked_select(slot.index_select(0, others).eq(order));
  slot.index_put_({fresh}, torch::arange(b - a, b - a + fresh.size(0), p.options()));
  BlockTensors bt = block_tensors(b - a + fresh.size(0), b - a, indptr.slice(0, a, b + 1) - e0, slot.index_select(0, p));
  slot.index_fill_(0, fresh, -1);
  slot.slice(0, a, b).fill_(-1);
  return {std::move(bt), torch::cat({dst_rows, fresh})};
}

// The halo plan (sampler/halo.hpp) with the rows it serves on the device, where the layer's rows are.
struct HaloServe : HaloPlan {
  torch::Tensor serve_t;
};

HaloServe ask_halo(const Shard& shard, const comm::Communicator& comm, const torch::Device& device) {
  HaloServe halo{ask_halo(shard, comm), {}};
  halo.serve_t = torch::from_blob(halo.serve.data(), {static_cast<std::int64_t>(halo.serve.size())}, torch::kLong).to(device).clone();
  return halo;
}

// Full-graph degrees of owned and halo nodes, for GraphConv's normalisation, one per table row on
// `device`. The graph is taken as symmetric (every dataset the tools build for training is): a
// node's out-degree is its row length.
torch::Tensor table_degrees(const Shard& shard, const HaloServe& halo, const comm::Communicator& comm, const torch::Device& device) {
  const NodeId n_own = shard.graph.num_nodes();
  std::vector<double> own_deg(static_cast<std::size_t>(n_own));
  for (NodeId u = 0; u < n_own; ++u) own_deg[static_cast<std::size_t>(u)] = static_cast<double>(shard.graph.degree(u));
  std::vector<double> deg_reply(halo.serve.size());
  for (std::size_t i = 0; i < halo.serve.size(); ++i) deg_reply[i] = own_deg[static_cast<std::size_t>(halo.serve[i])];
  auto halo_deg = comm.alltoallv<double>(deg_reply, halo.counts);
  std::vector<float> table_deg(own_deg.begin(), own_deg.end());
  table_deg.insert(table_deg.end(), halo_deg.data.begin(), halo_deg.data.end());
  return torch::from_blob(table_deg.data(), {n_own + halo.n_halo}, torch::kFloat).to(device).clone();
}

// Which layers project their table before the sums, and the widest rows a block gathers.
struct LayerPlan {
  std::vector<bool> hoisted;
  std::int64_t widest = 1;
};

// Decided on the whole graph's sizes so that every rank sends and expects rows of the same width.
LayerPlan plan_layers(Gnn& model, const Shard& shard, std::int64_t n_halo, const comm::Communicator& comm) {
  const CsrGraph& g = shard.graph;
  const NodeId n_own = g.num_nodes();
  const std::int64_t L = model->options.layers();
  std::vector<std::int64_t> sizes{g.num_edges(), n_own + n_halo, n_own};
  comm.allreduce_inplace(std::span<std::int64_t>(sizes), comm::Op::kSum);
  LayerPlan plan;
  plan.hoisted.resize(static_cast<std::size_t>(L));
  for (std::int64_t l = 0; l < L; ++l) {
    plan.hoisted[static_cast<std::size_t>(l)] = model->projects_table(l, sizes[0], sizes[1], sizes[2]);
    plan.widest = std::max(plan.widest, plan.hoisted[static_cast<std::size_t>(l)] ? model->projected_width(l) : model->layer_in_dim(l));
  }
  return plan;
}

// The end of the block that starts at dst row `a` and keeps within `block_edges` in-edges and
// `block_src` src rows (one dst row at least); `seen` and `marked` are scratch, left clear.
NodeId sized_block_end(const CsrGraph& g, std::span<const std::int64_t> nbr_pos, NodeId a, std::int64_t block_edges, std::int64_t block_src,
                       std::vector<char>& seen, std::vector<std::int64_t>& marked) {
  const NodeId n_own = g.num_nodes();
  auto mark = [&](std::int64_t p) {
    if (!seen[static_cast<std::size_t>(p)]) {
      seen[static_cast<std::size_t>(p)] = 1;
      marked.push_back(p);
    }
  };
  NodeId b = a;
  std::int64_t edges = 0;
  while (b < n_own) {
    // The dst node itself is a src row (the dst-prefix), then its new neighbours.
    std::int64_t fresh = seen[static_cast<std::size_t>(b)] ? 0 : 1;
    for (EdgeId e = g.indptr()[b]; e < g.indptr()[b + 1]; ++e) fresh += seen[static_cast<std::size_t>(nbr_pos[static_cast<std::size_t>(e)])] ? 0 : 1;
    const std::int64_t deg = g.indptr()[b + 1] - g.indptr()[b];
    if (b > a && (edges + deg > block_edges || static_cast<std::int64_t>(marked.size()) + fresh > block_src)) break;
    mark(b);
    for (EdgeId e = g.indptr()[b]; e < g.indptr()[b + 1]; ++e) mark(nbr_pos[static_cast<std::size_t>(e)]);
    edges += deg;
    ++b;
  }
  for (std::int64_t p : marked) seen[static_cast<std::size_t>(p)] = 0;
  marked.clear();
  return b;
}

// Blocks of `chunk` dst nodes, or (chunk 0) as large as kEvalBlockBytes allows for their per-edge
// tensors (two int64 indices, and GAT's messages) and `src_bytes` for their src rows (gathered
// from the layer's table at the widest a block gathers): a large block's src rows approach the
// table's, so each row is gathered about once per layer, where many small blocks would repeat
// that for every block a row is a neighbour in. Returns the blocks' first dst rows, then n_own.
std::vector<NodeId> block_bounds(Gnn& model, const CsrGraph& g, std::span<const std::int64_t> nbr_pos, std::int64_t table_rows, std::int64_t chunk,
                                 std::int64_t src_bytes, std::int64_t widest) {
  const NodeId n_own = g.num_nodes();
  const std::int64_t edge_bytes = model->edge_bytes();
  const std::int64_t block_edges = std::max<std::int64_t>(1, kEvalBlockBytes / edge_bytes);
  const std::int64_t block_src = std::max<std::int64_t>(1, src_bytes / (4 * widest));
  std::vector<NodeId> bounds{0};
  std::vector<char> seen(static_cast<std::size_t>(table_rows), 0);
  std::vector<std::int64_t> marked;
  while (bounds.back() < n_own) {
    const NodeId a = bounds.back();
    bounds.push_back(chunk > 0 ? std::min(n_own, a + chunk) : sized_block_end(g, nbr_pos, a, block_edges, block_src, seen, marked));
  }
  return bounds;
}

// The blocks of every layer step, cut on the device from the graph's rows and their neighbours'
// table rows. Every layer has the same blocks: the first layer's are kept for the others while
// they fit in `kept_bytes_limit`. On the CPU the tensors alias `g` and `nbr_pos`, which must
// outlive this.
class LayerBlocks {
 public:
  LayerBlocks(const CsrGraph& g, std::span<const std::int64_t> nbr_pos, torch::Tensor deg_t, std::vector<NodeId> bounds, std::int64_t layers,
              std::int64_t kept_bytes_limit, const torch::Device& device)
      : g_(g),
        indptr_t_(torch::from_blob(const_cast<EdgeId*>(g.indptr().data()), {g.num_nodes() + 1}, torch::kLong).to(device)),
        nbr_t_(torch::from_blob(const_cast<std::int64_t*>(nbr_pos.data()), {static_cast<std::int64_t>(nbr_pos.size())}, torch::kLong).to(device)),
        slot_(torch::full({deg_t.size(0)}, -1, indptr_t_.options())),
        deg_t_(std::move(deg_t)),
        bounds_(std::move(bounds)),
        layers_(layers),
        kept_bytes_limit_(kept_bytes_limit) {}

  std::size_t size() const { return bounds_.size() - 1; }
  NodeId begin(std::size_t k) const { return bounds_[k]; }
  NodeId end(std::size_t k) const { return bounds_[k + 1]; }

  // Block k of layer l: a kept one, or one cut into `cut`.
  const std::pair<BlockTensors, torch::Tensor>& get(std::size_t k, std::int64_t l, std::pair<BlockTensors, torch::Tensor>& cut) {
    if (k >= kept_.size()) {
      const NodeId a = begin(k), b = end(k);
      cut = cut_block(indptr_t_, nbr_t_, slot_, a, b, g_.indptr()[a], g_.indptr()[b]);
      cut.first.src_degree = deg_t_.index_select(0, cut.second);
      const std::int64_t bytes = 16 * cut.first.src.size(0) + 12 * cut.second.size(0) + 12 * (b - a);
      if (l == 0 && l + 1 < layers_ && kept_.size() == k && kept_bytes_ + bytes <= kept_bytes_limit_) {
        kept_bytes_ += bytes;
        kept_.push_back(std::move(cut));
      }
    }
    return k < kept_.size() ? kept_[k] : cut;
  }

 private:
  const CsrGraph& g_;
  torch::Tensor indptr_t_, nbr_t_;
  torch::Tensor slot_;  // cut_block's scratch, one per table row
  torch::Tensor deg_t_;
  std::vector<NodeId> bounds_;
  std::int64_t layers_, kept_bytes_limit_, kept_bytes_ = 0;
  std::vector<std::pair<BlockTensors, torch::Tensor>> kept_;
};

// The owned rows' input features on `device`.
torch::Tensor input_rows(const Shard& shard, const torch::Device& device) {
  const NodeId n_own = shard.graph.num_nodes();
  if (shard.feature_dim > 0 && n_own > 0 && shard.feature_dtype == FeatureDtype::kFloat32)
    return torch::from_blob(const_cast<float*>(shard.features.data()), {n_own, shard.feature_dim}, torch::kFloat).to(device);
  // 2-byte rows go to the device as stored and are widened there (half the bytes copied).
  if (shard.feature_dim > 0 && n_own > 0)
    return torch::from_blob(const_cast<std::uint16_t*>(shard.features16.data()), {n_own, shard.feature_dim},
                            shard.feature_dtype == FeatureDtype::kFloat16 ? torch::kHalf : torch::kBFloat16)
        .to(device)
        .to(torch::kFloat);
  return torch::zeros({n_own, shard.feature_dim}, torch::TensorOptions().device(device));
}

// A layer's table: this rank's rows `h`, then the halo rows, fetched from their owners.
torch::Tensor exchange_halo(const torch::Tensor& h, const HaloServe& halo, const comm::Communicator& comm, const torch::Device& device) {
  const std::int64_t d = h.size(1);
  const torch::Tensor rows = h.index_select(0, halo.serve_t).to(torch::kCPU).contiguous();
  std::vector<std::int64_t> row_counts(halo.counts.begin(), halo.counts.end());
  for (auto& c : row_counts) c *= d;
  const auto got = comm.alltoallv<float>(std::span<const float>(rows.data_ptr<float>(), static_cast<std::size_t>(rows.numel())), row_counts);
  if (halo.n_halo == 0) return h;
  return torch::cat({h, torch::from_blob(const_cast<float*>(got.data.data()), {halo.n_halo, d}, torch::kFloat).to(device)});
}

// Layer l for every owned row, from the previous layer's rows `h` (projected first when hoisted),
// block by block.
torch::Tensor layer_step(Gnn& model, std::int64_t l, bool projected, torch::Tensor h, const HaloServe& halo, LayerBlocks& blocks,
                         const comm::Communicator& comm, const torch::Device& device) {
  if (projected) h = model->project_layer(l, h);
  const torch::Tensor table = exchange_halo(h, halo, comm, device);
  torch::Tensor out = torch::empty({h.size(0), model->layer_out_dim(l)}, h.options());
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    std::pair<BlockTensors, torch::Tensor> cut;
    const auto& [bt, pos_t] = blocks.get(k, l, cut);
    out.slice(0, blocks.begin(k), blocks.end(k)).copy_(model->forward_layer(l, bt, table.index_select(0, pos_t), projected));
  }
  return out;
}

}  // namespace

torch::Tensor full_inference(Gnn& model, const Shard& shard, const comm::Communicator& comm, const torch::Device& device, std::int64_t chunk,
                             std::int64_t src_bytes, std::int64_t kept_bytes_limit, std::int64_t keep_after, torch::Tensor* kept) {
  EvalScope scope(*model);
  // The collectives, in this order on every rank: the halo requests, the halo degrees, the graph's
  // sizes, then one row exchange per layer.
  const HaloServe halo = ask_halo(shard, comm, device);
  const torch::Tensor deg_t = table_degrees(shard, halo, comm, device);
  const std::vector<std::int64_t> nbr_pos = neighbour_rows(shard);
  const LayerPlan plan = plan_layers(model, shard, halo.n_halo, comm);
  const std::int64_t L = model->options.layers();
  LayerBlocks blocks(shard.graph, nbr_pos, deg_t,
                     block_bounds(model, shard.graph, nbr_pos, shard.graph.num_nodes() + halo.n_halo, chunk, src_bytes, plan.widest), L, kept_bytes_limit,
                     device);
  torch::Tensor h = model->encode(input_rows(shard, device));
  // Jumping knowledge reads every layer's rows; otherwise only the last layer's go to the readout.
  std::vector<torch::Tensor> outs;
  for (std::int64_t l = 0; l < L; ++l) {
    if (kept != nullptr && l == keep_after) *kept = h;
    h = layer_step(model, l, plan.hoisted[static_cast<std::size_t>(l)], h, halo, blocks, comm, device);
    if (model->reads_every_layer()) outs.push_back(h);
  }
  if (kept != nullptr && keep_after == L) *kept = h;
  if (outs.empty()) outs.push_back(h);
  return model->readout(outs, h.size(0));
}

SplitMetrics score_full(const Task& task, const torch::Tensor& output, const Shard& shard, const comm::Communicator& comm) {
  const std::unique_ptr<TaskMetrics> metrics = task.make_metrics(shard.val_idx.size());
  metrics->add_full(output, shard);
  return metrics->reduce(comm);
}

SplitMetrics evaluate_full(const Task& task, Gnn& model, const Shard& shard, const comm::Communicator& comm, const torch::Device& device, std::int64_t chunk) {
  return score_full(task, full_inference(model, shard, comm, device, chunk), shard, comm);
}

}  // namespace shardgnn
