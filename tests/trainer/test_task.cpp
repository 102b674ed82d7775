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
  mb.labels = std::move(labels);
  return mb;
}

BatchTensors tensors_of(const MiniBatch& mb) {
  BatchTensors t;
  t.y = torch::tensor(mb.labels);  // int64, as the stager's
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
