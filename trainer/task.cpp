#include "trainer/task.hpp"

#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <vector>

#include "datasets/error.hpp"

namespace shardgnn {

namespace {

std::vector<std::int64_t> argmax_cpu(const torch::Tensor& logits) {
  const torch::Tensor p = logits.argmax(/*dim=*/1).to(torch::kCPU).contiguous();
  return {p.data_ptr<std::int64_t>(), p.data_ptr<std::int64_t>() + p.numel()};
}

// A confusion matrix per split of the predicted classes (argmax of the logits) against the labels.
class ConfusionMetrics final : public TaskMetrics {
 public:
  ConfusionMetrics(std::int64_t classes, std::size_t val_entries) : val_entries_(val_entries), val_(classes), test_(classes) {}

 private:
  void do_add_batch(const torch::Tensor& output, const MiniBatch& mb) override {
    const auto pred = argmax_cpu(output);
    for (std::size_t i = 0; i < pred.size(); ++i, ++pos_) (pos_ < val_entries_ ? val_ : test_).add(mb.labels[i], pred[i]);
  }

  void do_add_full(const torch::Tensor& output, const Shard& shard) override {
    const auto pred = argmax_cpu(output);
    const NodeId first = shard.book.begin(shard.part);
    for (NodeId v : shard.val_idx.span()) val_.add(shard.labels[static_cast<std::size_t>(v - first)], pred[static_cast<std::size_t>(v - first)]);
    for (NodeId v : shard.test_idx.span()) test_.add(shard.labels[static_cast<std::size_t>(v - first)], pred[static_cast<std::size_t>(v - first)]);
  }

  SplitMetrics do_reduce(const comm::Communicator& comm) override {
    // Both matrices in one buffer: one collective per evaluation, not one per split.
    std::vector<std::int64_t> both(val_.counts());
    both.insert(both.end(), test_.counts().begin(), test_.counts().end());
    comm.allreduce_inplace(std::span<std::int64_t>(both), comm::Op::kSum);
    const auto half = static_cast<std::ptrdiff_t>(val_.counts().size());
    SplitMetrics m;
    m.val = Confusion(val_.classes(), {both.begin(), both.begin() + half}).metrics();
    m.test = Confusion(val_.classes(), {both.begin() + half, both.end()}).metrics();
    // Each rank's own test nodes, for the run's result (three numbers a rank); only when a test
    // split was scored, which the summed count tells every rank alike, so validations pay nothing.
    if (m.test.count > 0) m.test_per_rank = comm.allgather(test_.metrics());
    return m;
  }

  std::size_t val_entries_, pos_ = 0;  // pos_: the schedule's entries (seeds) scored so far
  Confusion val_, test_;
};

}  // namespace

void NodeClassification::do_check(const Shard& shard, const std::string& dataset) const {
  if (shard.num_classes < 1) throw InputError("dataset '" + dataset + "' has no labels: nothing to train on");
  if (shard.multilabel)
    throw InputError("dataset '" + dataset + "' is multi-label (a set of " + std::to_string(shard.num_classes) +
                     " labels per node); this build trains single-label node classification only");
}

torch::Tensor NodeClassification::do_loss(const torch::Tensor& output, const BatchTensors& batch, bool mean) const {
  namespace F = torch::nn::functional;
  auto options = F::CrossEntropyFuncOptions().ignore_index(-1);
  if (!mean) options.reduction(torch::kSum);
  return F::cross_entropy(output, batch.y, options);
}

torch::Tensor NodeClassification::do_train_stat_sum(const torch::Tensor& output, const BatchTensors& batch) const {
  return output.argmax(/*dim=*/1).eq(batch.y).logical_and(batch.y.ge(0)).sum();
}

std::int64_t NodeClassification::do_examples(const MiniBatch& mb) const {
  return std::count_if(mb.labels.begin(), mb.labels.end(), [](std::int64_t y) { return y >= 0; });
}

torch::Tensor NodeClassification::do_predictions(const torch::Tensor& output) const { return output.argmax(1).to(torch::kCPU).to(torch::kLong).contiguous(); }

std::unique_ptr<TaskMetrics> NodeClassification::do_make_metrics(std::size_t val_entries) const {
  return std::make_unique<ConfusionMetrics>(classes_, val_entries);
}

std::unique_ptr<Task> make_task(const TrainConfig& /*config*/, const Shard& shard) { return std::make_unique<NodeClassification>(shard.num_classes); }

}  // namespace shardgnn
