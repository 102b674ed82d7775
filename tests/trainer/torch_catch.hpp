// libtorch (through glog) defines a CHECK macro that aborts the process; Catch's CHECK must win.
// Include this instead of <catch2/catch.hpp> in tests that use torch, after the torch headers.
#pragma once

#include <torch/nn.h>

#undef CHECK
#include <catch2/catch.hpp>

#include <cstdint>
#include <initializer_list>
#include <vector>

// A float tensor written out row by row, one initializer list a row.
inline torch::Tensor rows(std::initializer_list<std::initializer_list<float>> values) {
  std::vector<float> flat;
  std::int64_t cols = 0;
  for (auto r : values) {
    cols = static_cast<std::int64_t>(r.size());
    flat.insert(flat.end(), r.begin(), r.end());
  }
  return torch::tensor(flat).view({static_cast<std::int64_t>(values.size()), cols});
}
