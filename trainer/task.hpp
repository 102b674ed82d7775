// What the trainer learns, behind one interface: the width of the model's output rows (the head),
// the loss of a batch, the statistic training reports per step, the count of a batch's examples,
// the evaluation metrics and the validation score that picks the best model. The loop (train.cpp)
// and evaluation (evaluate.cpp) call only this; none of them knows which task runs. Interfaces
// are a public non-virtual method over a private virtual one, implementations `final`, as in
// mt-KaHyPar.
//
// NodeClassification (single-label): one label per seed node (-1 = unlabelled), softmax
// cross-entropy over the labelled seeds, correct predictions as the training statistic, a
// confusion matrix per split giving accuracy and macro-F1, and validation accuracy selecting the
// best model. MultiLabelClassification and LinkPrediction (below) are the others.
//
// How the tasks plug in, with no case of their own in the loop:
// - Seeds. A batch's seeds are the nodes the sampler expands (today the SeedScheduler's training
//   nodes, or the evaluation nodes); its examples and their targets travel with the batch
//   (MiniBatch::targets, each task its own alternative, and BatchTensors::y on the device) and
//   are read by the task alone, which is why loss_sum, train_stat_sum, examples and the metrics
//   receive the batch rather than a label vector.
// - Link prediction: a batch's examples are edges. LinkSchedule (sampler/link_batches.hpp) hands
//   the producer each batch's training edges plus the negatives drawn for them (keyed by epoch
//   and edge, so a resumed run draws the same); their endpoints become the batch's seeds, its
//   positives are cut from the sampled blocks, and the pairs (positions among the seeds) with
//   their 0/1 targets travel as the batch's targets. output_width is the embedding width; the loss
//   scores each pair from its endpoints' rows (binary cross-entropy); examples counts the pairs;
//   add_full keeps full inference's rows, and reduce scores the shard's held-out pairs (AUC, AP,
//   MRR, Hits@K). The task's pair scorer is a module of its own (modules()), which the trainer
//   registers in the model.
// - Multi-label node classification: the targets are each seed's label set, packed 64 labels to an
//   int64 word (BatchTensors::y [seeds * words], unpacked on the device); output_width is the
//   label count; the loss is sigmoid + binary cross-entropy over every entry; the statistic counts
//   the entries predicted right, and examples the entries (both rates' denominator); the metrics
//   sum per-label true and false positives and false negatives across ranks, and micro-F1 is the
//   selection score.
// A task whose metrics are not accuracy and macro-F1 adds its fields to ClassMetrics (the record
// the metrics file writes, so the score that selects is also the score logged), and its
// selection_score reads them: the loop sees one number and its name.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "partition/shards.hpp"
#include "sampler/minibatch.hpp"
#include "trainer/config.hpp"
#include "trainer/metrics.hpp"
#include "model/gnn.hpp"

namespace shardgnn {

// A task's evaluation sums for the validation and test splits of one evaluation: batches (or full
// inference) are added on each rank, then reduced across ranks once. Batches come in the order of
// the evaluation schedule, whose first `val_entries` entries (Task::make_metrics) are validation
// examples and the rest test examples; a batch may straddle the two, and the metrics count the
// entries themselves because only the task knows what an entry is (a seed node here, an edge for
// link prediction).
class TaskMetrics {
 public:
  virtual ~TaskMetrics() = default;
  TaskMetrics() = default;
  TaskMetrics(const TaskMetrics&) = delete;
  TaskMetrics& operator=(const TaskMetrics&) = delete;

  // `output`: the model's rows for the seeds of the schedule's next batch (any device).
  void add_batch(const torch::Tensor& output, const MiniBatch& mb) { do_add_batch(output, mb); }
  // `output`: the rows of every node the shard owns (full_inference), scored on the shard's
  // validation and test sets.
  void add_full(const torch::Tensor& output, const Shard& shard) { do_add_full(output, shard); }
  // Collective over `comm` (every rank calls it once, whatever it added): one all-reduce for both
  // splits' sums, then each split's metrics, and (when a test split was scored) an all-gather of
  // each rank's own test metrics.
  SplitMetrics reduce(const comm::Communicator& comm) { return do_reduce(comm); }

 private:
  virtual void do_add_batch(const torch::Tensor& output, const MiniBatch& mb) = 0;
  virtual void do_add_full(const torch::Tensor& output, const Shard& shard) = 0;
  virtual SplitMetrics do_reduce(const comm::Communicator& comm) = 0;
};

class Task {
 public:
  virtual ~Task() = default;
  Task() = default;
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  // Throws InputError when the shard lacks what the task trains on (checked on every rank before
  // any collective work; `dataset` names it in the message).
  void check(const Shard& shard, const std::string& dataset) const { do_check(shard, dataset); }
  // Columns of the model's output rows (the head).
  std::int64_t output_width() const { return do_output_width(); }
  // The loss over the batch's examples, summed (the gradient all-reduce averages over all ranks'
  // examples) or averaged (a rank training alone); a scalar with its autograd graph. `output`: the
  // model's rows for the batch's seeds; `batch`: the batch's tensors, targets included.
  torch::Tensor loss_sum(const torch::Tensor& output, const BatchTensors& batch) const { return do_loss(output, batch, /*mean=*/false); }
  torch::Tensor loss_mean(const torch::Tensor& output, const BatchTensors& batch) const { return do_loss(output, batch, /*mean=*/true); }
  // The per-step training statistic summed over the batch's examples, a scalar tensor on the
  // output's device (EpochRecord::train_acc is its sum over the examples' count); call it without
  // gradients.
  torch::Tensor train_stat_sum(const torch::Tensor& output, const BatchTensors& batch) const { return do_train_stat_sum(output, batch); }
  // The batch's examples that count in the loss and the statistic, on the host (no device wait).
  std::int64_t examples(const MiniBatch& mb) const { return do_examples(mb); }
  // What `shardgnn predict` writes for the model's output rows: a tensor on the CPU, one row (or
  // entry) per output row; NodeClassification: the argmax class, int64 [n]; multi-label: each
  // label's sigmoid, float32 [n, labels].
  torch::Tensor predictions(const torch::Tensor& output) const { return do_predictions(output); }
  // Empty sums for one evaluation whose schedule starts with `val_entries` validation entries.
  std::unique_ptr<TaskMetrics> make_metrics(std::size_t val_entries) const { return do_make_metrics(val_entries); }
  // The validation score that selects the best model (higher is better) and its name for messages.
  double selection_score(const ClassMetrics& val) const { return do_selection_score(val); }
  std::string_view selection_name() const { return do_selection_name(); }
  // Modules of the task's own (a pair scorer's weights), which the trainer registers in the model
  // under these names so that they are trained, all-reduced, broadcast and checkpointed with it.
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> modules() const { return do_modules(); }

 private:
  virtual void do_check(const Shard& shard, const std::string& dataset) const = 0;
  virtual std::int64_t do_output_width() const = 0;
  virtual torch::Tensor do_loss(const torch::Tensor& output, const BatchTensors& batch, bool mean) const = 0;
  virtual torch::Tensor do_train_stat_sum(const torch::Tensor& output, const BatchTensors& batch) const = 0;
  virtual std::int64_t do_examples(const MiniBatch& mb) const = 0;
  virtual torch::Tensor do_predictions(const torch::Tensor& output) const = 0;
  virtual std::unique_ptr<TaskMetrics> do_make_metrics(std::size_t val_entries) const = 0;
  virtual double do_selection_score(const ClassMetrics& val) const = 0;
  virtual std::string_view do_selection_name() const = 0;
  virtual std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> do_modules() const { return {}; }
};

// Single-label node classification over `classes` classes.
class NodeClassification final : public Task {
 public:
  explicit NodeClassification(std::int64_t classes) : classes_(classes) {}

 private:
  void do_check(const Shard& shard, const std::string& dataset) const override;
  std::int64_t do_output_width() const override { return classes_; }
  torch::Tensor do_loss(const torch::Tensor& output, const BatchTensors& batch, bool mean) const override;
  torch::Tensor do_train_stat_sum(const torch::Tensor& output, const BatchTensors& batch) const override;
  std::int64_t do_examples(const MiniBatch& mb) const override;
  torch::Tensor do_predictions(const torch::Tensor& output) const override;
  std::unique_ptr<TaskMetrics> do_make_metrics(std::size_t val_entries) const override;
  double do_selection_score(const ClassMetrics& val) const override { return val.accuracy; }
  std::string_view do_selection_name() const override { return "accuracy"; }

  std::int64_t classes_;
};

// Multi-label node classification over `labels` labels: each seed's targets are its label set
// (MiniBatch::targets' LabelSetTargets, LabelSets::words() int64 words a seed), a sigmoid per label
// with binary cross-entropy over every (seed, label) entry, the entries on the right side of 0.5 as
// the training statistic, per-label true and false positives and false negatives per split giving
// micro-F1 (over all entries) and macro-F1 (the mean of every label's F1, 0 for a label neither
// present nor predicted, as scikit-learn's f1_score over an indicator matrix), and validation
// micro-F1 selecting the best model.
class MultiLabelClassification final : public Task {
 public:
  explicit MultiLabelClassification(std::int64_t labels) : labels_(labels) {}

 private:
  void do_check(const Shard& shard, const std::string& dataset) const override;
  std::int64_t do_output_width() const override { return labels_; }
  torch::Tensor do_loss(const torch::Tensor& output, const BatchTensors& batch, bool mean) const override;
  torch::Tensor do_train_stat_sum(const torch::Tensor& output, const BatchTensors& batch) const override;
  std::int64_t do_examples(const MiniBatch& mb) const override;
  torch::Tensor do_predictions(const torch::Tensor& output) const override;
  std::unique_ptr<TaskMetrics> do_make_metrics(std::size_t val_entries) const override;
  double do_selection_score(const ClassMetrics& val) const override { return val.micro_f1; }
  std::string_view do_selection_name() const override { return "micro-F1"; }

  std::int64_t labels_;
};

// Scores node pairs from their endpoints' rows [n, D]: the dot product; (mlp) a two-layer
// perceptron over their elementwise product, D -> D -> 1 with a ReLU between (PyG's and DGL's
// link-prediction examples' MLP predictor); or (distmult) sum_d h_u[d] r[d] h_v[d] with a learnt
// diagonal r per relation (Yang et al. 2015; R-GCN's link-prediction decoder), `relation` [R, D]
// holding one row for an untyped graph's one relation, starting at ones (the dot product).
// Returns logits [n].
class PairScorerImpl : public torch::nn::Module {
 public:
  PairScorerImpl(std::int64_t width, ScorerKind kind, std::int64_t relations = 1);
  torch::Tensor forward(const torch::Tensor& hu, const torch::Tensor& hv);
  ScorerKind kind() const noexcept { return !fc1.is_empty() ? ScorerKind::kMlp : relation.defined() ? ScorerKind::kDistMult : ScorerKind::kDot; }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::Tensor relation;
};
TORCH_MODULE(PairScorer);

// Link prediction over `width`-wide embeddings: a batch's examples are node pairs (MiniBatch::
// labels: per pair the positions of its endpoints among the seeds and its 0/1 target, from
// LinkSchedule), scored by a PairScorer, with binary cross-entropy over positives and negatives;
// the training statistic counts the pairs on the right side of 0. Evaluation is full-neighbourhood
// only: add_full keeps the shard's rows, and reduce fetches the held-out pairs' remote endpoints
// from their owners, scores every pair and ranks them: AUC and AP over each split's positives and
// negatives (scores gathered on every rank), MRR and Hits@K over the ranking negatives (sums
// all-reduced). Validation AUC (or MRR, `select_mrr`) selects the best model.
class LinkPrediction final : public Task {
 public:
  LinkPrediction(std::int64_t width, const LinkConfig& config);
  // With a trained scorer (predict's, loaded with the weights).
  LinkPrediction(std::int64_t width, const LinkConfig& config, PairScorer scorer);

 private:
  void do_check(const Shard& shard, const std::string& dataset) const override;
  std::int64_t do_output_width() const override { return width_; }
  torch::Tensor do_loss(const torch::Tensor& output, const BatchTensors& batch, bool mean) const override;
  torch::Tensor do_train_stat_sum(const torch::Tensor& output, const BatchTensors& batch) const override;
  std::int64_t do_examples(const MiniBatch& mb) const override { return static_cast<std::int64_t>(std::get<PairTargets>(mb.targets).rows.size() / 3); }
  torch::Tensor do_predictions(const torch::Tensor& output) const override { return output.to(torch::kCPU).to(torch::kFloat).contiguous(); }
  std::unique_ptr<TaskMetrics> do_make_metrics(std::size_t val_entries) const override;
  double do_selection_score(const ClassMetrics& val) const override { return config_.select_mrr ? val.mrr : val.auc; }
  std::string_view do_selection_name() const override { return config_.select_mrr ? "MRR" : "AUC"; }
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> do_modules() const override { return {{"scorer", scorer_.ptr()}}; }
  // The scores (logits) of a batch's pairs and their targets.
  std::pair<torch::Tensor, torch::Tensor> scored(const torch::Tensor& output, const BatchTensors& batch) const;

  std::int64_t width_;
  LinkConfig config_;
  PairScorer scorer_;
};

// The task a run trains: node classification over the shard's classes, multi-label when its
// labels are sets (Shard::multilabel); link prediction with --task link. An InputError when
// TrainConfig::task says otherwise.
std::unique_ptr<Task> make_task(const TrainConfig& config, const Shard& shard);

}  // namespace shardgnn
