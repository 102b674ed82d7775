// Train/validation/test splits for datasets that come without one.
#pragma once

#include <cstdint>
#include <string>

#include "datasets/dataset.hpp"

namespace shardgnn {

struct SplitSpec {
  enum class Kind { kNone, kRandom, kPerClass } kind = Kind::kNone;
  double train_fraction = 0, val_fraction = 0;   // kRandom: fractions of labelled nodes; rest is test
  std::int64_t train_per_class = 0, val_per_class = 0;  // kPerClass (Shchur et al. 2018); rest is test
  std::uint64_t seed = 0;
};

// "random:0.6,0.2" or "per-class:20,30". Throws InputError on anything else.
SplitSpec parse_split_spec(const std::string& text, std::uint64_t seed);

// Replaces ds's split with one drawn from its labelled nodes. Per-class: a class with too few
// nodes is an error naming the class.
void assign_split(Dataset& ds, const SplitSpec& spec);
// assign_split of a seeded random split: these fractions of the labelled nodes, the rest test.
void assign_random_split(Dataset& ds, double train_fraction, double val_fraction, std::uint64_t seed);

}  // namespace shardgnn
