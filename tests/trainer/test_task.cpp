// The trainer's task (trainer/task.hpp): node classification's loss, training statistic, example
// count, metrics and selection score against hand-computed values. The metrics' reduction is
// collective ([mpi]): every rank adds the same outputs, so the counts scale with the ranks and the
// rates stay as computed by hand.
#include <cmath>
#include <string>
#include <vector>

#include "trainer/torch_catch.hpp"  // torch, then Catch
#include "comm/communicator.hpp"
#include "trainer/config.hpp"
#include "trainer/link_metrics.hpp"
#include "trainer/task.hpp"

using namespace shardgnn;
using Approx = Catch::Detail::Approx;
namespace F = torch::nn::functional;

namespace {


// Logits whose argmax is `pred` in each row (of `classes` columns).
torch::Tensor predicting(const std::vector<std::int64_t>& pred, std::int64_t classes) {
  torch::Tensor t = torch::zeros({static_cast<std::int64_t>(pred.size()), classes});
  for (std::size_t i = 0; i < pred.size(); ++i) t[static_cast<std::int64_t>(i)][pred[i]] = 1.0f;
  return t;
}

// A batch with one seed per label (only the labels matter to the task).
MiniBatch labelled(std::vector<std::int64_t> labels) {
  MiniBatch mb;
  mb.layer_nodes.emplace_back(labels.size(), 0);
  mb.targets = ClassTargets{std::move(labels)};
  return mb;
}

BatchTensors tensors_of(const MiniBatch& mb) {
  BatchTensors t;
  t.y = torch::tensor(target_values(mb.targets));  // int64, as the stager's
  return t;
}

}  // namespace

TEST_CASE("node classification: loss sums the cross-entropy of the labelled rows, the statistic counts their correct predictions", "[trainer][task]") {
  const NodeClassification task(3);
  CHECK(task.output_width() == 3);
  // Predictions 0, 1, 2, 1 against labels 0, 2, unlabelled, 1: rows 0 and 3 are right.
  const torch::Tensor logits = rows({{2, 0, 0}, {0, 1, 0}, {0, 0, 3}, {0, 2, 1}});
  const MiniBatch mb = labelled({0, 2, -1, 1});
  const BatchTensors t = tensors_of(mb);

  const torch::Tensor sum = task.loss_sum(logits, t);
  CHECK(torch::equal(sum, F::cross_entropy(logits, t.y, F::CrossEntropyFuncOptions().reduction(torch::kSum).ignore_index(-1))));
  const double e = std::exp(1.0), e2 = std::exp(2.0);
  const double by_hand = -std::log(e2 / (e2 + 2)) - std::log(1 / (2 + e)) - std::log(e2 / (e2 + e + 1));
  CHECK(sum.item<double>() == Approx(by_hand).epsilon(1e-6));
  const torch::Tensor mean = task.loss_mean(logits, t);
  CHECK(torch::equal(mean, F::cross_entropy(logits, t.y, F::CrossEntropyFuncOptions().ignore_index(-1))));
  CHECK(mean.item<double>() == Approx(by_hand / 3).epsilon(1e-6));

  torch::NoGradGuard no_grad;
  CHECK(task.train_stat_sum(logits, t).item<std::int64_t>() == 2);
  CHECK(task.examples(mb) == 3);
  CHECK(task.examples(labelled({-1, -1})) == 0);
}

TEST_CASE("node classification: validation accuracy selects the best model", "[trainer][task]") {
  const NodeClassification task(4);
  ClassMetrics val;
  val.count = 10;
  val.accuracy = 0.6;
  val.macro_f1 = 0.3;
  CHECK(task.selection_score(val) == 0.6);
  CHECK(std::string(task.selection_name()) == "accuracy");
}

TEST_CASE("the task is made for the shard's classes and needs its labels", "[trainer][task]") {
  Shard shard;
  shard.num_classes = 7;
  CHECK(make_task(TrainConfig{}, shard)->output_width() == 7);
  CHECK_NOTHROW(make_task(TrainConfig{}, shard)->check(shard, "cora"));
  shard.num_classes = 0;
  CHECK_THROWS_WITH(make_task(TrainConfig{}, shard)->check(shard, "plain"), Catch::Contains("dataset 'plain' has no labels"));
}

TEST_CASE("node classification metrics: batches split at the schedule's validation entries, reduced across ranks", "[trainer][task][mpi]") {
  const auto world = comm::Communicator::world();
  const auto P = static_cast<std::int64_t>(world.size());
  const NodeClassification task(3);
  // Four validation entries, then test: the second batch straddles the two.
  //   val  (truth, pred): (0, 0) (0, 1) (2, 2) (1, 1)    test: (1, 0) (-1, 2)
  const std::unique_ptr<TaskMetrics> metrics = task.make_metrics(4);
  metrics->add_batch(predicting({0, 1, 2}, 3), labelled({0, 0, 2}));
  metrics->add_batch(predicting({1, 0, 2}, 3), labelled({1, 1, -1}));
  const SplitMetrics m = metrics->reduce(world);
  CHECK(m.val.count == 4 * P);
  CHECK(m.val.accuracy == Approx(0.75));
  // F1 per class: 0: 2*1/(2+1); 1: 2*1/(1+2); 2: 2*1/(1+1).
  CHECK(m.val.macro_f1 == Approx((2.0 / 3 + 2.0 / 3 + 1.0) / 3));
  CHECK(m.test.count == P);  // the unlabelled entry is skipped
  CHECK(m.test.accuracy == 0);
  CHECK(m.test.macro_f1 == 0);
}

TEST_CASE("node classification metrics: full inference scored on the shard's own validation and test nodes", "[trainer][task][mpi]") {
  const auto world = comm::Communicator::world();
  const auto P = static_cast<std::int64_t>(world.size());
  // Part 1 of a two-part book owns global nodes 2..5 (rows 0..3 of the output).
  Shard shard;
  shard.part = 1;
  shard.book = PartitionBook({0, 2, 6});
  shard.num_classes = 3;
  shard.labels = Array<std::int64_t>(std::vector<std::int64_t>{0, 1, 2, 1});
  shard.val_idx = Array<NodeId>(std::vector<NodeId>{2, 4, 5});
  shard.test_idx = Array<NodeId>(std::vector<NodeId>{3});
  const NodeClassification task(3);
  const std::unique_ptr<TaskMetrics> metrics = task.make_metrics(shard.val_idx.size());
  //   val (truth, pred): node 2 (0, 0), node 4 (2, 2), node 5 (1, 0)    test: node 3 (1, 1)
  metrics->add_full(predicting({0, 1, 2, 0}, 3), shard);
  const SplitMetrics m = metrics->reduce(world);
  CHECK(m.val.count == 3 * P);
  CHECK(m.val.accuracy == Approx(2.0 / 3));
  // F1 per class: 0: 2*1/(1+2); 1: 0 (truth 1, predicted never); 2: 2*1/(1+1).
  CHECK(m.val.macro_f1 == Approx((2.0 / 3 + 0 + 1.0) / 3));
  CHECK(m.test.count == P);
  CHECK(m.test.accuracy == 1);
  CHECK(m.test.macro_f1 == 1);
}

TEST_CASE("link metrics: AUC, AP, MRR and Hits@K against hand-computed values, ties as scikit-learn and OGB count them", "[trainer][task][link]") {
  const std::vector<float> pos{0.9f, 0.8f, 0.4f}, neg{0.7f, 0.3f, 0.4f};
  // Positives above negatives: 3 + 3 + (1 + a tie's half) of 9 pairs.
  CHECK(roc_auc(pos, neg) == Approx(7.5 / 9));
  // Thresholds 0.9 (P 1, R 1/3), 0.8 (1, 2/3), 0.7 (2/3, 2/3), 0.4 (3/5, 1): 1/3 + 1/3 + 0 + 0.6/3.
  CHECK(average_precision(pos, neg) == Approx(1.0 / 3 + 1.0 / 3 + 0.2));
  CHECK(std::isnan(roc_auc({}, neg)));
  // Ranks among each positive's 3 negatives: 0.9 first (rank 1); 0.5 with one above and one tied
  // (1 + 1 + 0.5 = 2.5).
  const std::vector<float> rp{0.9f, 0.5f}, rn{0.1f, 0.2f, 0.3f, 0.6f, 0.5f, 0.1f};
  const std::int64_t ks[] = {1, 2, 3};
  RankingSums r;
  add_ranks(rp, rn, 3, ks, r);
  CHECK(r.count == 2);
  CHECK(r.reciprocal_rank == Approx(1 + 1 / 2.5));
  CHECK(r.hits == std::vector<double>{1, 1, 2});
}

TEST_CASE("link prediction: binary cross-entropy over the batch's pairs, scored by dot product or MLP", "[trainer][task][link]") {
  LinkConfig lc;
  const LinkPrediction task(2, lc);
  CHECK(task.output_width() == 2);
  CHECK(task.selection_name() == "AUC");
  // Seeds 0, 1, 2 with rows (1, 0), (2, 0), (0, 1): the pairs (0, 1) positive and (0, 2) negative.
  const torch::Tensor rows_ = rows({{1, 0}, {2, 0}, {0, 1}});
  MiniBatch mb;
  mb.targets = PairTargets{{0, 1, 1, 0, 2, 0}};
  BatchTensors t;
  t.y = torch::tensor(target_values(mb.targets));
  CHECK(task.examples(mb) == 2);
  // Logits 2 (target 1) and 0 (target 0).
  const double by_hand = std::log1p(std::exp(-2.0)) + std::log(2.0);
  CHECK(task.loss_sum(rows_, t).item<double>() == Approx(by_hand).epsilon(1e-6));
  CHECK(task.loss_mean(rows_, t).item<double>() == Approx(by_hand / 2).epsilon(1e-6));
  torch::NoGradGuard no_grad;
  CHECK(task.train_stat_sum(rows_, t).item<std::int64_t>() == 2);  // 2 > 0 right, 0 <= 0 right
  // The MLP scorer's weights are the task's modules, for the trainer to register in the model.
  lc.scorer = ScorerKind::kMlp;
  const LinkPrediction mlp(2, lc);
  const auto modules = mlp.modules();
  REQUIRE(modules.size() == 1);
  CHECK(modules[0].first == "scorer");
  CHECK(modules[0].second->parameters().size() == 4);
  CHECK(task.modules()[0].second->parameters().empty());
  CHECK(mlp.loss_sum(rows_, t).dim() == 0);
}

TEST_CASE("link prediction metrics: held-out pairs scored from full inference, remote endpoints fetched from their owners", "[trainer][task][link][mpi]") {
  const auto world = comm::Communicator::world();
  const int P = world.size(), me = world.rank();
  // Each rank owns 2 nodes, global ids 2r and 2r + 1, rows (r + 1, 0) and (0, 1): a positive pair
  // joins a rank's first node to the next rank's first (score (r + 1)(r + 2)), a negative its
  // first to the next rank's second (score 0); ranking: two negatives a positive, both second nodes.
  std::vector<NodeId> offsets;
  for (int r = 0; r <= P; ++r) offsets.push_back(2 * r);
  Shard shard;
  shard.part = me;
  shard.book = PartitionBook(offsets);
  shard.edge_split = true;
  shard.eval_negatives = 2;
  const NodeId next = 2 * ((me + 1) % P);
  for (auto* pos : {&shard.val_pos, &shard.test_pos}) *pos = Array<NodeId>(std::vector<NodeId>{2 * me, next});
  for (auto* neg : {&shard.val_neg, &shard.test_neg}) *neg = Array<NodeId>(std::vector<NodeId>{2 * me, next + 1});
  for (auto* dst : {&shard.val_neg_dst, &shard.test_neg_dst}) *dst = Array<NodeId>(std::vector<NodeId>{next + 1, 2 * me + 1});
  LinkConfig lc;
  lc.hits_k = 1;
  const LinkPrediction task(2, lc);
  const auto metrics = task.make_metrics(0);
  metrics->add_full(rows({{static_cast<float>(me + 1), 0}, {0, 1}}), shard);
  const SplitMetrics m = metrics->reduce(world);
  // Every positive scores above every negative: AUC, AP, MRR and Hits@1 all 1.
  CHECK(m.val.count == P);
  CHECK(m.test.auc == 1);
  CHECK(m.test.ap == Approx(1));
  CHECK(m.val.mrr == 1);
  CHECK(m.val.hits == 1);
  CHECK(m.val.hits_k == 1);
  REQUIRE(m.test_per_rank.size() == static_cast<std::size_t>(P));
  CHECK(m.test_per_rank[static_cast<std::size_t>(me)].auc == 1);
}
