// Cora as the trainer tests train on it: the dataset, read once, and a quick configuration.
#pragma once

#include "datasets/readers.hpp"
#include "sampler/sampler.hpp"
#include "test_paths.hpp"
#include "trainer/train.hpp"

namespace shardgnn::test {

inline const Dataset& cora() {
  static const Dataset ds = read_dataset(sample("cora.npz"), {});
  return ds;
}

inline TrainConfig quick_config(ModelKind model) {
  TrainConfig c;
  c.model.kind = model;
  c.model.hidden = 64;
  c.epochs = 12;
  c.files.progress = false;
  c.eval.final_full = true;
  return c;
}

inline SamplerConfig quick_sampler() {
  SamplerConfig s;
  s.fanouts = {10, 10};
  s.batch_size = 64;
  s.prefetch = 2;
  return s;
}

}  // namespace shardgnn::test
