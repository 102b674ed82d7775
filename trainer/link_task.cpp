// Link prediction on the task seam (task.hpp): the pair scorer, the loss over a batch's pairs and
// the full-neighbourhood metrics of the held-out pairs.
#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "datasets/error.hpp"
#include "trainer/link_metrics.hpp"
#include "trainer/task.hpp"

namespace shardgnn {

PairScorerImpl::PairScorerImpl(std::int64_t width, ScorerKind kind, std::int64_t relations) {
  if (kind == ScorerKind::kDistMult) relation = register_parameter("relation", torch::ones({relations, width}));
  if (kind != ScorerKind::kMlp) return;
  fc1 = register_module("fc1", torch::nn::Linear(width, width));
  fc2 = register_module("fc2", torch::nn::Linear(width, 1));
}

torch::Tensor PairScorerImpl::forward(const torch::Tensor& hu, const torch::Tensor& hv) {
  if (kind() == ScorerKind::kMlp) return fc2->forward(torch::relu(fc1->forward(hu * hv))).squeeze(1);
  return (kind() == ScorerKind::kDistMult ? hu * relation[0] * hv : hu * hv).sum(1);
}

LinkPrediction::LinkPrediction(std::int64_t width, const LinkConfig& config) : width_(width), config_(config), scorer_(width, config.scorer) {}
LinkPrediction::LinkPrediction(std::int64_t width, const LinkConfig& config, PairScorer scorer) : width_(width), config_(config), scorer_(std::move(scorer)) {}

void LinkPrediction::do_check(const Shard& shard, const std::string& dataset) const {
  if (!shard.edge_split)
    throw InputError("--task link: dataset '" + dataset + "' has no held-out edges; split it first (shardgnn data split-edges DIR --out DIR2)");
  if (config_.select_mrr && shard.eval_negatives == 0)
    throw InputError("--select mrr: dataset '" + dataset + "' has no ranking negatives; split it with --eval-negatives K");
  if (config_.hits_k < 1) throw InputError("--hits must be at least 1, got " + std::to_string(config_.hits_k));
}

std::pair<torch::Tensor, torch::Tensor> LinkPrediction::scored(const torch::Tensor& output, const BatchTensors& batch) const {
  const torch::Tensor p = batch.y.view({-1, 3});
  const torch::Tensor logits = const_cast<PairScorerImpl&>(*scorer_).forward(output.index_select(0, p.select(1, 0)), output.index_select(0, p.select(1, 1)));
  return {logits, p.select(1, 2).to(logits.scalar_type())};
}

torch::Tensor LinkPrediction::do_loss(const torch::Tensor& output, const BatchTensors& batch, bool mean) const {
  namespace F = torch::nn::functional;
  const auto [logits, target] = scored(output, batch);
  auto options = F::BinaryCrossEntropyWithLogitsFuncOptions();
  if (!mean) options.reduction(torch::kSum);
  return F::binary_cross_entropy_with_logits(logits, target, options);
}

torch::Tensor LinkPrediction::do_train_stat_sum(const torch::Tensor& output, const BatchTensors& batch) const {
  const auto [logits, target] = scored(output, batch);
  return logits.gt(0).eq(target.gt(0.5)).sum();
}

namespace {

// The held-out pairs of one evaluation, scored from full inference's rows.
class LinkMetrics final : public TaskMetrics {
 public:
  LinkMetrics(PairScorer scorer, std::int64_t hits_k) : scorer_(std::move(scorer)), hits_k_(hits_k) {}

 private:
  void do_add_batch(const torch::Tensor&, const MiniBatch&) override {
    throw InputError("link prediction is evaluated with full neighbourhoods only (--eval full)");
  }
  void do_add_full(const torch::Tensor& output, const Shard& shard) override {
    rows_ = output.detach();
    shard_ = &shard;
  }

  // Every rank's rows of the nodes in `want` (sorted, distinct, none of them this rank's):
  // requests go to the owners in one all-to-all, the rows come back in another.
  torch::Tensor fetch(const comm::Communicator& comm, const std::vector<NodeId>& want) const {
    const PartitionBook& book = shard_->book;
    const int P = comm.size();
    const std::int64_t D = rows_.size(1);
    std::vector<std::int64_t> counts(static_cast<std::size_t>(P), 0);
    for (const NodeId v : want) ++counts[static_cast<std::size_t>(book.owner(v))];  // `want` sorted: grouped by owner already
    const auto asked = comm.alltoallv<NodeId>(want, counts);
    const NodeId first = book.begin(shard_->part);
    const torch::Tensor mine = rows_.to(torch::kCPU).to(torch::kFloat).contiguous();
    std::vector<float> reply;
    reply.reserve(asked.data.size() * static_cast<std::size_t>(D));
    for (const NodeId v : asked.data) {
      const float* r = mine.data_ptr<float>() + (v - first) * D;
      reply.insert(reply.end(), r, r + D);
    }
    std::vector<std::int64_t> reply_counts(asked.counts);
    for (auto& c : reply_counts) c *= D;
    auto got = comm.alltoallv<float>(reply, reply_counts);
    return torch::from_blob(got.data.data(), {static_cast<std::int64_t>(want.size()), D}, torch::kFloat).clone().to(rows_.device()).to(rows_.scalar_type());
  }

  SplitMetrics do_reduce(const comm::Communicator& comm) override {
    torch::NoGradGuard no_grad;
    const Shard& s = *shard_;
    const NodeId first = s.book.begin(s.part), end = s.book.end(s.part);
    std::vector<NodeId> want;
    for_each_held_out(s, [&](const char*, const Array<NodeId>& rows, std::int64_t, const Array<NodeId>&, bool) {
      for (const NodeId v : rows.span())
        if (v < first || v >= end) want.push_back(v);
    });
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    const torch::Tensor all = torch::cat({rows_, fetch(comm, want)});
    const auto position = [&](NodeId v) {
      return v >= first && v < end ? v - first : (end - first) + static_cast<std::int64_t>(std::lower_bound(want.begin(), want.end(), v) - want.begin());
    };
    // Scores of pairs (u[i], v[i]) as host floats.
    const auto score = [&](const std::vector<NodeId>& u, const std::vector<NodeId>& v) {
      std::vector<std::int64_t> pu(u.size()), pv(v.size());
      std::transform(u.begin(), u.end(), pu.begin(), position);
      std::transform(v.begin(), v.end(), pv.begin(), position);
      const auto index = [&](std::vector<std::int64_t>& p) { return torch::from_blob(p.data(), {static_cast<std::int64_t>(p.size())}, torch::kLong).to(all.device()); };
      const torch::Tensor out = scorer_->forward(all.index_select(0, index(pu)), all.index_select(0, index(pv))).to(torch::kCPU).to(torch::kFloat).contiguous();
      return std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
    };
    const auto pairs = [&](const Array<NodeId>& rows) {
      std::vector<NodeId> u, v;
      for (std::size_t i = 0; i + 1 < rows.size(); i += 2) u.push_back(rows[i]), v.push_back(rows[i + 1]);
      return score(u, v);
    };
    struct Scored {
      std::vector<float> pos, neg, rank_neg;
      std::int64_t k = 0;
    } split[2];
    const Array<NodeId>* pos[2] = {&s.val_pos, &s.test_pos};
    const Array<NodeId>* neg[2] = {&s.val_neg, &s.test_neg};
    const Array<NodeId>* dst[2] = {&s.val_neg_dst, &s.test_neg_dst};
    std::vector<double> sums;  // per split: count, reciprocal rank, hits
    const std::int64_t ks[1] = {hits_k_};
    for (int t = 0; t < 2; ++t) {
      split[t].pos = pairs(*pos[t]);
      split[t].neg = pairs(*neg[t]);
      RankingSums r;
      if (s.eval_negatives > 0) {
        split[t].k = s.eval_negatives;
        std::vector<NodeId> u, w;
        for (std::size_t i = 0; i < dst[t]->size(); ++i) {
          u.push_back((*pos[t])[i / static_cast<std::size_t>(s.eval_negatives) * 2]);
          w.push_back((*dst[t])[i]);
        }
        split[t].rank_neg = score(u, w);
        add_ranks(split[t].pos, split[t].rank_neg, s.eval_negatives, ks, r);
      }
      sums.insert(sums.end(), {r.count, r.reciprocal_rank, r.hits.empty() ? 0.0 : r.hits[0]});
    }
    // This rank's own test pairs, for the run's per-rank record.
    const ClassMetrics own = metrics(split[1].pos, split[1].neg, {sums[3], sums[4], sums[5]}, s.eval_negatives > 0);
    comm.allreduce_inplace(std::span<double>(sums), comm::Op::kSum);
    SplitMetrics m;
    for (int t = 0; t < 2; ++t) {
      const auto all_pos = comm.allgatherv<float>(split[t].pos).data, all_neg = comm.allgatherv<float>(split[t].neg).data;
      (t == 0 ? m.val : m.test) = metrics(all_pos, all_neg, {sums[3 * t], sums[3 * t + 1], sums[3 * t + 2]}, s.eval_negatives > 0);
    }
    if (m.test.count > 0) m.test_per_rank = comm.allgather(own);
    return m;
  }

  ClassMetrics metrics(std::span<const float> pos, std::span<const float> neg, std::array<double, 3> ranks, bool ranked) const {
    ClassMetrics c;
    c.kind = ScoreKind::kLinks;
    c.count = static_cast<std::int64_t>(pos.size());
    if (pos.empty()) return c;
    c.auc = neg.empty() ? -1 : roc_auc(pos, neg);
    c.ap = average_precision(pos, neg);
    // Pairs on the right side of 0, as the training statistic counts them.
    const auto right = std::count_if(pos.begin(), pos.end(), [](float x) { return x > 0; }) + std::count_if(neg.begin(), neg.end(), [](float x) { return x <= 0; });
    c.accuracy = static_cast<double>(right) / static_cast<double>(pos.size() + neg.size());
    if (ranked && ranks[0] > 0) {
      c.mrr = ranks[1] / ranks[0];
      c.hits = ranks[2] / ranks[0];
      c.hits_k = hits_k_;
    }
    return c;
  }

  PairScorer scorer_;
  std::int64_t hits_k_;
  torch::Tensor rows_;
  const Shard* shard_ = nullptr;
};

}  // namespace

std::unique_ptr<TaskMetrics> LinkPrediction::do_make_metrics(std::size_t) const { return std::make_unique<LinkMetrics>(scorer_, config_.hits_k); }

}  // namespace shardgnn
