#include "trainer/evaluate.hpp"

#include "datasets/error.hpp"

#include <algorithm>

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

std::vector<std::int64_t> argmax_cpu(const torch::Tensor& logits) {
  const torch::Tensor p = logits.argmax(/*dim=*/1).to(torch::kCPU).contiguous();
  return {p.data_ptr<std::int64_t>(), p.data_ptr<std::int64_t>() + p.numel()};
}

// The model's predictions for a batch's seeds, each added to `val` while `pos` < n_val, else to
// `test` (pos counts the seeds scored so far).
void score_batch(Gnn& model, const KeptBatch& kb, const torch::Device& device, std::size_t& pos, std::size_t n_val, Confusion& val, Confusion& test) {
  const BatchTensors t = to_tensors(kb.mb, device);
  const auto pred = argmax_cpu(kb.aggregated.defined() ? model->forward_aggregated(t.blocks, kb.aggregated) : model->forward(t.blocks, t.x));
  for (std::size_t i = 0; i < pred.size(); ++i, ++pos) (pos < n_val ? val : test).add(kb.mb.labels[i], pred[i]);
}

// A batch to keep: for GraphSAGE and GCN its first layer's sums, its features released.
KeptBatch keepable(Gnn& model, MiniBatch mb, const torch::Device& device) {
  KeptBatch kb;
  if (model->options.kind() != ModelKind::kGat && !mb.blocks.empty()) {
    const BatchTensors t = to_tensors(mb, device);
    kb.aggregated = model->aggregate_input(t.blocks.front(), t.x);  // a new tensor: the features may go
    FeatureRows().swap(mb.features);
  }
  kb.mb = std::move(mb);
  return kb;
}

SplitMetrics finish(Confusion& val, Confusion& test, const comm::Communicator& comm) {
  // One collective for both matrices.
  std::vector<std::int64_t> both(val.counts());
  both.insert(both.end(), test.counts().begin(), test.counts().end());
  comm.allreduce_inplace(std::span<std::int64_t>(both), comm::Op::kSum);
  const auto half = static_cast<std::ptrdiff_t>(val.counts().size());
  const Confusion v(val.classes(), {both.begin(), both.begin() + half}), t(val.classes(), {both.begin() + half, both.end()});
  return {v.metrics(), t.metrics()};
}

}  // namespace

std::size_t batch_bytes(const KeptBatch& kb) {
  const MiniBatch& mb = kb.mb;
  // Feature buffers come from the huge-page pool, which may hand out up to twice the request.
  std::size_t n = 2 * sizeof(float) * mb.features.size() + sizeof(std::int64_t) * (mb.labels.size() + mb.degrees.size());
  if (kb.aggregated.defined()) n += static_cast<std::size_t>(kb.aggregated.numel() * kb.aggregated.element_size());
  for (const auto& nodes : mb.layer_nodes) n += sizeof(NodeId) * nodes.size();
  for (const Block& b : mb.blocks) n += sizeof(std::int64_t) * (b.indptr.size() + b.indices.size());
  return n;
}

SplitMetrics evaluate_sampled(Gnn& model, DistSampler& sampler, FeatureStore& features, const torch::Device& device, std::span<const NodeId> val_nodes,
                              std::span<const NodeId> test_nodes, std::vector<KeptBatch>* keep, std::size_t keep_bytes) {
  EvalScope scope(*model);
  const std::int64_t C = sampler.shard().num_classes;
  std::vector<NodeId> seeds(val_nodes.begin(), val_nodes.end());
  const std::size_t n_val = seeds.size();
  seeds.insert(seeds.end(), test_nodes.begin(), test_nodes.end());
  const auto batches = sampler.eval_batches(seeds);
  Confusion val(C), test(C);
  std::size_t pos = 0, kept = 0;
  if (keep) keep->clear();
  bool keeping = keep != nullptr;
  for (std::size_t step = 0; step < batches.size(); ++step) {
    MiniBatch mb = produce_batch(sampler, features, batches[step], kEvalEpoch, static_cast<std::int64_t>(step));
    if (mb.seeds().empty()) continue;
    // A batch to keep is scored as it will be later, so that every validation gives the same.
    KeptBatch kb = keeping ? keepable(model, std::move(mb), device) : KeptBatch{std::move(mb), {}};
    score_batch(model, kb, device, pos, n_val, val, test);
    if (keeping) {
      kept += batch_bytes(kb);
      keeping = kept <= keep_bytes;
      if (keeping) keep->push_back(std::move(kb));
      else keep->clear();
    }
  }
  return finish(val, test, sampler.comm());
}

SplitMetrics evaluate_kept(Gnn& model, const std::vector<KeptBatch>& val_batches, const torch::Device& device, const comm::Communicator& comm) {
  EvalScope scope(*model);
  const std::int64_t C = model->options.out();
  Confusion val(C), test(C);
  std::size_t pos = 0;
  for (const KeptBatch& kb : val_batches) score_batch(model, kb, device, pos, SIZE_MAX, val, test);
  return finish(val, test, comm);
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

}  // namespace

torch::Tensor full_inference(Gnn& model, const Shard& shard, const comm::Communicator& comm, const torch::Device& device, std::int64_t chunk,
                             std::int64_t src_bytes, std::int64_t kept_bytes_limit) {
  EvalScope scope(*model);
  const PartitionBook& book = shard.book;
  const NodeId first = book.begin(shard.part);
  const NodeId n_own = shard.graph.num_nodes();
  const auto n_halo = static_cast<std::int64_t>(shard.halo_nodes.size());
  const int P = comm.size();

  // The halo list is sorted by global id, hence grouped by owner in rank order (range book):
  // it is the request buffer as is, and the replies come back in its order.
  std::vector<std::int64_t> ask_counts(static_cast<std::size_t>(P), 0);
  for (PartId o : shard.halo_owner.span()) ++ask_counts[static_cast<std::size_t>(o)];
  const auto asked = comm.alltoallv<NodeId>(shard.halo_nodes.span(), ask_counts);
  std::vector<std::int64_t> serve(asked.data.size());
  for (std::size_t i = 0; i < serve.size(); ++i) serve[i] = asked.data[i] - first;

  // Full-graph degrees of owned and halo nodes, for GraphConv's normalisation. The graph is taken
  // as symmetric (every dataset the tools build for training is): a node's out-degree is its row
  // length.
  std::vector<double> own_deg(static_cast<std::size_t>(n_own));
  for (NodeId u = 0; u < n_own; ++u) own_deg[static_cast<std::size_t>(u)] = static_cast<double>(shard.graph.degree(u));
  std::vector<double> deg_reply(serve.size());
  for (std::size_t i = 0; i < serve.size(); ++i) deg_reply[i] = own_deg[static_cast<std::size_t>(serve[i])];
  auto halo_deg = comm.alltoallv<double>(deg_reply, asked.counts);
  std::vector<float> table_deg(own_deg.begin(), own_deg.end());
  table_deg.insert(table_deg.end(), halo_deg.data.begin(), halo_deg.data.end());
  const torch::Tensor deg_t = torch::from_blob(table_deg.data(), {n_own + n_halo}, torch::kFloat).to(device).clone();
  const torch::Tensor serve_t = torch::from_blob(serve.data(), {static_cast<std::int64_t>(serve.size())}, torch::kLong).to(device).clone();

  // Each edge's neighbour as its row in a layer's table (owned rows, then halo rows): found once,
  // for all layers.
  const CsrGraph& g = shard.graph;
  std::vector<std::int64_t> nbr_pos(static_cast<std::size_t>(g.num_edges()));
  for (std::size_t e = 0; e < nbr_pos.size(); ++e) {
    const NodeId v = g.indices()[e];
    if (v >= first && v < first + n_own) {
      nbr_pos[e] = v - first;
      continue;
    }
    const auto at = std::lower_bound(shard.halo_nodes.begin(), shard.halo_nodes.end(), v);
    // The loader checks the halo list is sorted, not that it is complete (a search per entry).
    if (at == shard.halo_nodes.end() || *at != v)
      throw InputError(shard.dir, "part " + std::to_string(shard.part),
                       "its halo_nodes.npy lacks node " + std::to_string(v) + ", a neighbour in its edges (run `shardgnn partition verify`)");
    nbr_pos[e] = n_own + (at - shard.halo_nodes.begin());
  }
  // Which layers project their table before the sums, decided on the whole graph's sizes so that
  // every rank sends and expects rows of the same width.
  const std::int64_t L = model->options.layers();
  std::vector<std::int64_t> sizes{g.num_edges(), n_own + n_halo, n_own};
  comm.allreduce_inplace(std::span<std::int64_t>(sizes), comm::Op::kSum);
  std::vector<bool> hoisted(static_cast<std::size_t>(L));
  std::int64_t widest = 1;  // the widest rows a block gathers
  for (std::int64_t l = 0; l < L; ++l) {
    hoisted[static_cast<std::size_t>(l)] = model->projects_table(l, sizes[0], sizes[1], sizes[2]);
    widest = std::max(widest, hoisted[static_cast<std::size_t>(l)] ? model->projected_width(l) : l == 0 ? shard.feature_dim : model->options.hidden());
  }
  // Blocks of `chunk` dst nodes, or (chunk 0) as large as kEvalBlockBytes allows for their per-edge
  // tensors (two int64 indices, and GAT's messages) and `src_bytes` for their src rows (gathered
  // from the layer's table at the widest a block gathers): a large block's src rows approach the
  // table's, so each row is gathered about once per layer, where many small blocks would repeat
  // that for every block a row is a neighbour in.
  const std::int64_t edge_bytes = 16 + (model->options.kind() == ModelKind::kGat ? 4 * std::max(model->options.hidden(), model->options.out()) : 0);
  const std::int64_t block_edges = std::max<std::int64_t>(1, kEvalBlockBytes / edge_bytes);
  const std::int64_t block_src = std::max<std::int64_t>(1, src_bytes / (4 * widest));
  std::vector<NodeId> bounds{0};
  {
    std::vector<char> seen(static_cast<std::size_t>(n_own + n_halo), 0);
    std::vector<std::int64_t> marked;
    while (bounds.back() < n_own) {
      const NodeId a = bounds.back();
      NodeId b = a;
      if (chunk > 0) {
        b = std::min(n_own, a + chunk);
      } else {
        std::int64_t edges = 0;
        while (b < n_own) {
          // The dst node itself is a src row (the dst-prefix), then its new neighbours.
          std::int64_t fresh = seen[static_cast<std::size_t>(b)] ? 0 : 1;
          for (EdgeId e = g.indptr()[b]; e < g.indptr()[b + 1]; ++e) fresh += seen[static_cast<std::size_t>(nbr_pos[static_cast<std::size_t>(e)])] ? 0 : 1;
          const std::int64_t deg = g.indptr()[b + 1] - g.indptr()[b];
          if (b > a && (edges + deg > block_edges || static_cast<std::int64_t>(marked.size()) + fresh > block_src)) break;
          auto mark = [&](std::int64_t p) {
            if (!seen[static_cast<std::size_t>(p)]) {
              seen[static_cast<std::size_t>(p)] = 1;
              marked.push_back(p);
            }
          };
          mark(b);
          for (EdgeId e = g.indptr()[b]; e < g.indptr()[b + 1]; ++e) mark(nbr_pos[static_cast<std::size_t>(e)]);
          edges += deg;
          ++b;
        }
        for (std::int64_t p : marked) seen[static_cast<std::size_t>(p)] = 0;
        marked.clear();
      }
      bounds.push_back(b);
    }
  }

  // The graph's rows and their neighbours' table rows on the device, where blocks are cut from them.
  const torch::Tensor indptr_t = torch::from_blob(const_cast<EdgeId*>(g.indptr().data()), {n_own + 1}, torch::kLong).to(device);
  const torch::Tensor nbr_t = torch::from_blob(nbr_pos.data(), {static_cast<std::int64_t>(nbr_pos.size())}, torch::kLong).to(device);
  torch::Tensor slot = torch::full({n_own + n_halo}, -1, indptr_t.options());
  torch::Tensor h;
  if (shard.feature_dim > 0 && n_own > 0)
    h = torch::from_blob(const_cast<float*>(shard.features.data()), {n_own, shard.feature_dim}, torch::kFloat).to(device);
  else
    h = torch::zeros({n_own, shard.feature_dim}, torch::TensorOptions().device(device));
  std::vector<std::pair<BlockTensors, torch::Tensor>> kept;
  std::int64_t kept_bytes = 0;
  for (std::int64_t l = 0; l < L; ++l) {
    const bool projected = hoisted[static_cast<std::size_t>(l)];
    if (projected) h = model->project_layer(l, h);
    const std::int64_t d = h.size(1);
    const torch::Tensor rows = h.index_select(0, serve_t).to(torch::kCPU).contiguous();
    std::vector<std::int64_t> row_counts(asked.counts.begin(), asked.counts.end());
    for (auto& c : row_counts) c *= d;
    const auto got = comm.alltoallv<float>(std::span<const float>(rows.data_ptr<float>(), static_cast<std::size_t>(rows.numel())), row_counts);
    torch::Tensor table = h;
    if (n_halo > 0)
      table = torch::cat({h, torch::from_blob(const_cast<float*>(got.data.data()), {n_halo, d}, torch::kFloat).to(device)});
    torch::Tensor out = torch::empty({n_own, model->layer_out_dim(l)}, h.options());
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
      const NodeId a = bounds[k], b = bounds[k + 1];
      std::pair<BlockTensors, torch::Tensor> cut;
      if (k >= kept.size()) {
        cut = cut_block(indptr_t, nbr_t, slot, a, b, g.indptr()[a], g.indptr()[b]);
        cut.first.src_degree = deg_t.index_select(0, cut.second);
        // Every layer has the same blocks: the first layer's are kept for the others while they fit.
        const std::int64_t bytes = 16 * cut.first.src.size(0) + 12 * cut.second.size(0) + 12 * (b - a);
        if (l == 0 && l + 1 < L && kept.size() == k && kept_bytes + bytes <= kept_bytes_limit) {
          kept_bytes += bytes;
          kept.push_back(std::move(cut));
        }
      }
      const auto& [bt, pos_t] = k < kept.size() ? kept[k] : cut;
      out.slice(0, a, b).copy_(model->forward_layer(l, bt, table.index_select(0, pos_t), projected));
    }
    h = out;
  }
  return h;
}

SplitMetrics evaluate_full(Gnn& model, const Shard& shard, const comm::Communicator& comm, const torch::Device& device, std::int64_t chunk) {
  const torch::Tensor logits = full_inference(model, shard, comm, device, chunk);
  const auto pred = argmax_cpu(logits);
  const NodeId first = shard.book.begin(shard.part);
  Confusion val(shard.num_classes), test(shard.num_classes);
  for (NodeId v : shard.val_idx.span()) val.add(shard.labels[static_cast<std::size_t>(v - first)], pred[static_cast<std::size_t>(v - first)]);
  for (NodeId v : shard.test_idx.span()) test.add(shard.labels[static_cast<std::size_t>(v - first)], pred[static_cast<std::size_t>(v - first)]);
  return finish(val, test, comm);
}

}  // namespace shardgnn
