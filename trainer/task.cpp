#include "trainer/task.hpp"

#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <span>
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
    const std::vector<std::int64_t>& y = std::get<ClassTargets>(mb.targets).classes;
    for (std::size_t i = 0; i < pred.size(); ++i, ++pos_) (pos_ < val_entries_ ? val_ : test_).add(y[i], pred[i]);
  }

  void do_add_full(const torch::Tensor& output, const Shard& shard) override {
    const auto pred = argmax_cpu(output);
    const NodeId first = shard.book.begin(shard.part);
    for (NodeId v : shard.val_idx) val_.add(shard.labels[static_cast<std::size_t>(v - first)], pred[static_cast<std::size_t>(v - first)]);
    for (NodeId v : shard.test_idx) test_.add(shard.labels[static_cast<std::size_t>(v - first)], pred[static_cast<std::size_t>(v - first)]);
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
  const std::vector<std::int64_t>& y = std::get<ClassTargets>(mb.targets).classes;
  return std::count_if(y.begin(), y.end(), [](std::int64_t c) { return c >= 0; });
}

torch::Tensor NodeClassification::do_predictions(const torch::Tensor& output) const { return output.argmax(1).to(torch::kCPU).to(torch::kLong).contiguous(); }

std::unique_ptr<TaskMetrics> NodeClassification::do_make_metrics(std::size_t val_entries) const {
  return std::make_unique<ConfusionMetrics>(classes_, val_entries);
}

namespace {

// A batch's label sets as 0/1 floats [seeds, labels], from its words (int64 [seeds * W]).
torch::Tensor unpack_label_sets(const torch::Tensor& words, std::int64_t labels) {
  const std::int64_t W = (labels + 63) / 64;
  const torch::Tensor shifts = torch::arange(64, words.options());
  // An arithmetic shift fills from the sign bit, which the mask drops.
  return torch::bitwise_right_shift(words.view({-1, W, 1}), shifts).bitwise_and(1).view({-1, W * 64}).slice(1, 0, labels).to(torch::kFloat);
}

// Per label, true and false positives and false negatives, and the entries right, of one split.
struct SetCounts {
  explicit SetCounts(std::int64_t labels) : tp(static_cast<std::size_t>(labels)), fp(tp.size()), fn(tp.size()) {}
  std::vector<std::int64_t> tp, fp, fn;
  std::int64_t right = 0, nodes = 0;
  void add(const std::uint8_t* pred, const std::uint8_t* truth) {
    for (std::size_t c = 0; c < tp.size(); ++c) {
      const bool p = pred[c] != 0, t = truth[c] != 0;
      tp[c] += p && t;
      fp[c] += p && !t;
      fn[c] += !p && t;
      right += p == t;
    }
    ++nodes;
  }
  std::vector<std::int64_t> flat() const {
    std::vector<std::int64_t> v(tp);
    v.insert(v.end(), fp.begin(), fp.end());
    v.insert(v.end(), fn.begin(), fn.end());
    v.push_back(right);
    v.push_back(nodes);
    return v;
  }
  static SetCounts from(std::span<const std::int64_t> v, std::int64_t labels) {
    SetCounts s(labels);
    const auto C = static_cast<std::size_t>(labels);
    std::copy_n(v.begin(), C, s.tp.begin());
    std::copy_n(v.begin() + static_cast<std::ptrdiff_t>(C), C, s.fp.begin());
    std::copy_n(v.begin() + static_cast<std::ptrdiff_t>(2 * C), C, s.fn.begin());
    s.right = v[3 * C];
    s.nodes = v[3 * C + 1];
    return s;
  }
  ClassMetrics metrics() const {
    ClassMetrics m;
    m.kind = ScoreKind::kLabelSets;
    m.count = nodes;
    std::int64_t TP = 0, FP = 0, FN = 0;
    double f1_sum = 0;
    for (std::size_t c = 0; c < tp.size(); ++c) {
      TP += tp[c];
      FP += fp[c];
      FN += fn[c];
      const std::int64_t d = 2 * tp[c] + fp[c] + fn[c];
      f1_sum += d > 0 ? 2.0 * static_cast<double>(tp[c]) / static_cast<double>(d) : 0.0;
    }
    const std::int64_t D = 2 * TP + FP + FN;
    m.micro_f1 = D > 0 ? 2.0 * static_cast<double>(TP) / static_cast<double>(D) : 0.0;
    m.macro_f1 = tp.empty() ? 0.0 : f1_sum / static_cast<double>(tp.size());
    const double entries = static_cast<double>(nodes) * static_cast<double>(tp.size());
    m.accuracy = entries > 0 ? static_cast<double>(right) / entries : 0.0;
    return m;
  }
};

// Label sets scored per split: a batch's seeds (schedule order: validation entries first) or
// full inference's rows of the shard's validation and test nodes.
class SetMetrics final : public TaskMetrics {
 public:
  SetMetrics(std::int64_t labels, std::size_t val_entries) : labels_(labels), val_entries_(val_entries), val_(labels), test_(labels) {}

 private:
  void do_add_batch(const torch::Tensor& output, const MiniBatch& mb) override {
    const torch::Tensor pred = output.gt(0).to(torch::kCPU).to(torch::kUInt8).contiguous();
    const std::vector<std::int64_t>& sets = std::get<LabelSetTargets>(mb.targets).words;
    const torch::Tensor words = torch::from_blob(const_cast<std::int64_t*>(sets.data()), {static_cast<std::int64_t>(sets.size())}, torch::kLong);
    const torch::Tensor truth = unpack_label_sets(words, labels_).to(torch::kUInt8).contiguous();
    const auto* p = pred.data_ptr<std::uint8_t>();
    const auto* t = truth.data_ptr<std::uint8_t>();
    for (std::int64_t i = 0; i < pred.size(0); ++i, ++pos_) (pos_ < val_entries_ ? val_ : test_).add(p + i * labels_, t + i * labels_);
  }

  void do_add_full(const torch::Tensor& output, const Shard& shard) override {
    const torch::Tensor pred = output.gt(0).to(torch::kCPU).to(torch::kUInt8).contiguous();
    const auto* p = pred.data_ptr<std::uint8_t>();
    const NodeId first = shard.book.begin(shard.part);
    const std::int64_t row = label_row_bytes(labels_);
    std::vector<std::uint8_t> truth(static_cast<std::size_t>(labels_));
    const auto add = [&](SetCounts& into, NodeId v) {
      const std::uint8_t* bits = shard.label_bits.data() + (v - first) * row;
      for (std::int64_t c = 0; c < labels_; ++c) truth[static_cast<std::size_t>(c)] = has_label(bits, c) ? 1 : 0;
      into.add(p + (v - first) * labels_, truth.data());
    };
    for (const NodeId v : shard.val_idx) add(val_, v);
    for (const NodeId v : shard.test_idx) add(test_, v);
  }

  SplitMetrics do_reduce(const comm::Communicator& comm) override {
    // Both splits' sums in one buffer: one collective per evaluation.
    std::vector<std::int64_t> both = val_.flat();
    const std::vector<std::int64_t> t = test_.flat();
    both.insert(both.end(), t.begin(), t.end());
    comm.allreduce_inplace(std::span<std::int64_t>(both), comm::Op::kSum);
    const std::size_t half = both.size() / 2;
    SplitMetrics m;
    m.val = SetCounts::from(std::span(both).first(half), labels_).metrics();
    m.test = SetCounts::from(std::span(both).subspan(half), labels_).metrics();
    if (m.test.count > 0) m.test_per_rank = comm.allgather(test_.metrics());
    return m;
  }

  std::int64_t labels_;
  std::size_t val_entries_, pos_ = 0;
  SetCounts val_, test_;
};

}  // namespace

void MultiLabelClassification::do_check(const Shard& shard, const std::string& dataset) const {
  if (shard.num_classes < 1 || !shard.multilabel) throw InputError("dataset '" + dataset + "' has no label sets: nothing to train a multi-label model on");
}

torch::Tensor MultiLabelClassification::do_loss(const torch::Tensor& output, const BatchTensors& batch, bool mean) const {
  namespace F = torch::nn::functional;
  auto options = F::BinaryCrossEntropyWithLogitsFuncOptions();
  if (!mean) options.reduction(torch::kSum);
  return F::binary_cross_entropy_with_logits(output, unpack_label_sets(batch.y, labels_), options);
}

torch::Tensor MultiLabelClassification::do_train_stat_sum(const torch::Tensor& output, const BatchTensors& batch) const {
  return output.gt(0).eq(unpack_label_sets(batch.y, labels_).gt(0.5f)).sum();
}

std::int64_t MultiLabelClassification::do_examples(const MiniBatch& mb) const {
  return static_cast<std::int64_t>(std::get<LabelSetTargets>(mb.targets).words.size()) / ((labels_ + 63) / 64) * labels_;
}

torch::Tensor MultiLabelClassification::do_predictions(const torch::Tensor& output) const { return torch::sigmoid(output).to(torch::kCPU).to(torch::kFloat).contiguous(); }

std::unique_ptr<TaskMetrics> MultiLabelClassification::do_make_metrics(std::size_t val_entries) const {
  return std::make_unique<SetMetrics>(labels_, val_entries);
}

std::unique_ptr<Task> make_task(const TrainConfig& config, const Shard& shard) {
  if (config.task == TaskKind::kLink) return std::make_unique<LinkPrediction>(config.link.embedding_dim > 0 ? config.link.embedding_dim : config.model.hidden, config.link);
  if (config.task == TaskKind::kClasses && shard.multilabel)
    throw InputError("--task classes: the dataset's labels are sets (label_bits.npy); pass --task label-sets or auto");
  if (config.task == TaskKind::kLabelSets && !shard.multilabel)
    throw InputError("--task label-sets: the dataset has one class per node (labels.npy); pass --task classes or auto");
  if (shard.multilabel) return std::make_unique<MultiLabelClassification>(shard.num_classes);
  return std::make_unique<NodeClassification>(shard.num_classes);
}

}  // namespace shardgnn
