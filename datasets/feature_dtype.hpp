// How feature values are stored: float32, or 2 bytes a value (IEEE float16, numpy's '<f2', or
// bfloat16, float32's upper half, stored as '<u2' since numpy has no bfloat16). Computation is
// float32 whatever the storage: a row is widened as it is copied into a batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "datasets/npy.hpp"

namespace shardgnn {

enum class FeatureDtype : std::uint8_t { kFloat32, kFloat16, kBFloat16 };

// "float32", "float16", "bfloat16".
std::string feature_dtype_name(FeatureDtype t);
// The name's dtype, or none for any other name (the caller says where it came from).
std::optional<FeatureDtype> feature_dtype_named(const std::string& name);
// The .npy dtype the values are written as.
DType feature_npy_dtype(FeatureDtype t);
inline std::size_t feature_value_bytes(FeatureDtype t) { return t == FeatureDtype::kFloat32 ? 4 : 2; }

// Round to nearest, ties to even; NaN stays a quiet NaN; float16 overflows to infinity and keeps
// subnormals.
std::uint16_t to_bfloat16(float x);
float from_bfloat16(std::uint16_t x);
std::uint16_t to_float16(float x);
float from_float16(std::uint16_t x);

// `n` float32 values into the stored type (`to` holds n * feature_value_bytes(t) bytes), and back.
// Returns the index of the first finite value that became infinite (float16 beyond 65504, or
// bfloat16 beyond float32's largest bfloat16), or n when every one fits.
std::size_t narrow_values(FeatureDtype t, const float* from, std::size_t n, void* to);
// The error a writer raises for such a value: `what` names the file and the node.
[[noreturn]] void throw_feature_overflow(FeatureDtype t, const std::string& what, float value);
void widen_values(FeatureDtype t, const void* from, std::size_t n, float* to);

}  // namespace shardgnn
