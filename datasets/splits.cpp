// Train/validation/test splits for datasets that come without one: a random split of the labelled
// nodes by fractions, or the per-class split of O. Shchur et al., "Pitfalls of Graph Neural Network
// Evaluation" (2018): a fixed number of training and validation nodes drawn from every class.
// Draws go through Boost.Random so a seed gives the same split on every platform.
#include "datasets/splits.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <string_view>
#include <system_error>
#include <vector>

#include "datasets/error.hpp"
#include "datasets/random.hpp"

namespace shardgnn {

namespace {

const char* const kExpected =
    "expected 'random:TRAIN,VAL' (fractions of the labelled nodes, e.g. random:0.6,0.2) or "
    "'per-class:TRAIN,VAL' (nodes per class, e.g. per-class:20,30); the rest is test";

// The shortest text that reads back as the same double, so sources and messages lose nothing.
std::string fmt_double(double x) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
}

template <class T>
bool parse_number(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Splits "X,Y" into two numbers; false when it is not exactly two well-formed numbers.
template <class T>
bool parse_pair(std::string_view s, T& first, T& second) {
  const auto comma = s.find(',');
  if (comma == std::string_view::npos) return false;
  return parse_number(s.substr(0, comma), first) && parse_number(s.substr(comma + 1), second);
}

void check_fractions(double train, double val) {
  auto ok = [](double f) { return std::isfinite(f) && f >= 0.0 && f <= 1.0; };
  if (!ok(train) || !ok(val))
    throw InputError("split: fractions must be in [0, 1], got train " + fmt_double(train) + ", validation " + fmt_double(val));
  // A little slack so that e.g. 0.7,0.3 is not refused for rounding.
  if (train + val > 1.0 + 1e-9)
    throw InputError("split: train and validation fractions must sum to at most 1, got " + fmt_double(train + val));
}

struct Split {
  std::vector<NodeId> train, val, test;
};

void store(Dataset& ds, Split s) {
  std::sort(s.train.begin(), s.train.end());
  std::sort(s.val.begin(), s.val.end());
  std::sort(s.test.begin(), s.test.end());
  ds.train_idx = Array<NodeId>(std::move(s.train));
  ds.val_idx = Array<NodeId>(std::move(s.val));
  ds.test_idx = Array<NodeId>(std::move(s.test));
}

// `nodes` (in an order that depends on nothing but the data) shuffled by the spec's seed and cut
// by its fractions.
Split random_split(std::vector<NodeId> nodes, const SplitSpec& spec) {
  check_fractions(spec.train_fraction, spec.val_fraction);
  Rng rng(derive_seed(spec.seed, 0));
  seeded_shuffle(std::span<NodeId>(nodes), rng);
  const std::int64_t total = static_cast<std::int64_t>(nodes.size());
  const std::int64_t n_train = std::min(total, static_cast<std::int64_t>(std::llround(spec.train_fraction * static_cast<double>(total))));
  const std::int64_t n_val = std::min(total - n_train, static_cast<std::int64_t>(std::llround(spec.val_fraction * static_cast<double>(total))));
  Split s;
  s.train.assign(nodes.begin(), nodes.begin() + n_train);
  s.val.assign(nodes.begin() + n_train, nodes.begin() + n_train + n_val);
  s.test.assign(nodes.begin() + n_train + n_val, nodes.end());
  return s;
}

}  // namespace

SplitSpec parse_split_spec(const std::string& text, std::uint64_t seed) {
  SplitSpec spec;
  spec.seed = seed;
  const std::string_view s(text);
  constexpr std::string_view kRandom = "random:", kPerClass = "per-class:";
  if (s.starts_with(kRandom)) {
    if (!parse_pair(s.substr(kRandom.size()), spec.train_fraction, spec.val_fraction))
      throw InputError("split " + quote_token(text) + ": " + kExpected);
    check_fractions(spec.train_fraction, spec.val_fraction);
    spec.kind = SplitSpec::Kind::kRandom;
  } else if (s.starts_with(kPerClass)) {
    if (!parse_pair(s.substr(kPerClass.size()), spec.train_per_class, spec.val_per_class))
      throw InputError("split " + quote_token(text) + ": " + kExpected);
    if (spec.train_per_class < 0 || spec.val_per_class < 0)
      throw InputError("split " + quote_token(text) + ": per-class counts must be >= 0");
    spec.kind = SplitSpec::Kind::kPerClass;
  } else {
    throw InputError("split " + quote_token(text) + ": " + kExpected);
  }
  return spec;
}

void assign_split(Dataset& ds, const SplitSpec& spec) {
  if (spec.kind == SplitSpec::Kind::kNone) throw InputError("split: no split kind given; " + std::string(kExpected));
  if (ds.num_classes <= 0 || (ds.labels.empty() && !ds.multilabel))
    throw InputError("split: dataset " + quote_token(ds.name) + " has no labels to split");
  if (ds.multilabel) {
    // Every node's label set is known (possibly empty): a random split of all nodes.
    if (spec.kind != SplitSpec::Kind::kRandom)
      throw InputError("split per-class: dataset " + quote_token(ds.name) + " is multi-label (a set of labels per node); use random:TRAIN,VAL");
    std::vector<NodeId> all(static_cast<std::size_t>(ds.num_nodes()));
    std::iota(all.begin(), all.end(), NodeId{0});
    store(ds, random_split(std::move(all), spec));
    return;
  }

  const std::int64_t num_classes = ds.num_classes;
  // Labelled nodes grouped by class, ascending id within a class (a counting sort), so the draws
  // below depend only on the labels and the seed.
  std::vector<std::int64_t> offset(static_cast<std::size_t>(num_classes) + 1, 0);
  for (std::size_t i = 0; i < ds.labels.size(); ++i) {
    const std::int64_t y = ds.labels[i];
    if (y >= num_classes)
      throw InputError("split: node " + std::to_string(i) + " has label " + std::to_string(y) + ", outside [-1, " +
                       std::to_string(num_classes) + ")");
    if (y >= 0) ++offset[static_cast<std::size_t>(y) + 1];
  }
  for (std::size_t c = 0; c < static_cast<std::size_t>(num_classes); ++c) offset[c + 1] += offset[c];
  std::vector<NodeId> nodes(static_cast<std::size_t>(offset.back()));
  {
    std::vector<std::int64_t> next(offset.begin(), offset.end() - 1);
    for (std::size_t i = 0; i < ds.labels.size(); ++i)
      if (const std::int64_t y = ds.labels[i]; y >= 0) nodes[static_cast<std::size_t>(next[static_cast<std::size_t>(y)]++)] = static_cast<NodeId>(i);
  }

  if (spec.kind == SplitSpec::Kind::kRandom) {
    // Shuffled in ascending id order, not class order, so the split ignores the labels entirely.
    std::sort(nodes.begin(), nodes.end());
    store(ds, random_split(std::move(nodes), spec));
    return;
  }
  Rng rng(derive_seed(spec.seed, 0));
  std::vector<NodeId> train, val, test;
  {
    if (spec.train_per_class < 0 || spec.val_per_class < 0)
      throw InputError("split: per-class counts must be >= 0, got train " + std::to_string(spec.train_per_class) +
                       ", validation " + std::to_string(spec.val_per_class));
    if (spec.train_per_class > std::numeric_limits<std::int64_t>::max() - spec.val_per_class)
      throw InputError("split: per-class counts are too large");
    const std::int64_t need = spec.train_per_class + spec.val_per_class;
    for (std::int64_t c = 0; c < num_classes; ++c) {
      const std::int64_t size = offset[static_cast<std::size_t>(c) + 1] - offset[static_cast<std::size_t>(c)];
      if (size < need)
        throw InputError("split: class " + std::to_string(c) + " has " + std::to_string(size) + " labelled nodes, fewer than the " +
                         std::to_string(spec.train_per_class) + " train + " + std::to_string(spec.val_per_class) +
                         " validation nodes per class asked for");
    }
    // The check above bounds need * num_classes by the number of labelled nodes.
    train.reserve(static_cast<std::size_t>(spec.train_per_class * num_classes));
    val.reserve(static_cast<std::size_t>(spec.val_per_class * num_classes));
    test.reserve(nodes.size() - static_cast<std::size_t>(need * num_classes));
    for (std::int64_t c = 0; c < num_classes; ++c) {
      const auto first = nodes.begin() + offset[static_cast<std::size_t>(c)];
      const auto last = nodes.begin() + offset[static_cast<std::size_t>(c) + 1];
      seeded_shuffle(std::span<NodeId>(first, last), rng);
      train.insert(train.end(), first, first + spec.train_per_class);
      val.insert(val.end(), first + spec.train_per_class, first + need);
      test.insert(test.end(), first + need, last);
    }
  }
  store(ds, {std::move(train), std::move(val), std::move(test)});
}

void assign_random_split(Dataset& ds, double train_fraction, double val_fraction, std::uint64_t seed) {
  SplitSpec spec;
  spec.kind = SplitSpec::Kind::kRandom;
  spec.train_fraction = train_fraction;
  spec.val_fraction = val_fraction;
  spec.seed = seed;
  assign_split(ds, spec);
}

}  // namespace shardgnn
