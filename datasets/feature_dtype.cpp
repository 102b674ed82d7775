#include "datasets/feature_dtype.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "datasets/error.hpp"
#include "datasets/vector_clones.hpp"

namespace shardgnn {

std::string feature_dtype_name(FeatureDtype t) {
  switch (t) {
    case FeatureDtype::kFloat32: return "float32";
    case FeatureDtype::kFloat16: return "float16";
    case FeatureDtype::kBFloat16: return "bfloat16";
  }
  return "?";
}

std::optional<FeatureDtype> feature_dtype_named(const std::string& name) {
  for (const FeatureDtype t : {FeatureDtype::kFloat32, FeatureDtype::kFloat16, FeatureDtype::kBFloat16})
    if (name == feature_dtype_name(t)) return t;
  return std::nullopt;
}

DType feature_npy_dtype(FeatureDtype t) {
  switch (t) {
    case FeatureDtype::kFloat32: return DType::kFloat32;
    case FeatureDtype::kFloat16: return DType::kFloat16;
    case FeatureDtype::kBFloat16: return DType::kUInt16;
  }
  return DType::kOther;
}

std::uint16_t to_bfloat16(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  if ((bits & 0x7fffffffU) > 0x7f800000U) return static_cast<std::uint16_t>((bits >> 16) | 0x40U);  // NaN stays a (quiet) NaN
  return static_cast<std::uint16_t>((bits + 0x7fffU + ((bits >> 16) & 1U)) >> 16);  // round to nearest, ties to even
}

float from_bfloat16(std::uint16_t x) { return std::bit_cast<float>(static_cast<std::uint32_t>(x) << 16); }

std::uint16_t to_float16(float x) {
  const auto b = std::bit_cast<std::uint32_t>(x);
  const auto sign = static_cast<std::uint16_t>((b >> 16) & 0x8000U);
  const std::uint32_t a = b & 0x7fffffffU;
  if (a > 0x7f800000U) return static_cast<std::uint16_t>(sign | 0x7e00U | ((a >> 13) & 0x3ffU));  // NaN, quiet
  if (a >= 0x477ff000U) return static_cast<std::uint16_t>(sign | 0x7c00U);  // from 65520 (65504 and a half step) up: infinity
  if (a >= 0x38800000U) {  // a normal float16 (2^-14 and up): rebias the exponent, round off 13 bits
    const std::uint32_t r = a - 0x38000000U;
    return static_cast<std::uint16_t>(sign | ((r + 0xfffU + ((r >> 13) & 1U)) >> 13));
  }
  if (a <= 0x33000000U) return sign;  // 2^-25 and below: zero (2^-25 is the tie, and zero the even side)
  // A subnormal float16, m * 2^-24: the float's 24-bit significand shifted into place, rounded.
  const std::uint32_t e = a >> 23, significand = (a & 0x7fffffU) | 0x800000U;
  const std::uint32_t shift = 126 - e;  // 14 to 24
  std::uint32_t m = significand >> shift;
  const std::uint32_t rest = significand & ((1U << shift) - 1), half = 1U << (shift - 1);
  if (rest > half || (rest == half && (m & 1U))) ++m;  // may carry into the smallest normal: the right bits
  return static_cast<std::uint16_t>(sign | m);
}

float from_float16(std::uint16_t x) {
  // Without branches, so that widen_values' loop vectorises (the fetch widens every row it gathers).
  const std::uint32_t sign = static_cast<std::uint32_t>(x & 0x8000U) << 16;
  const std::uint32_t em = static_cast<std::uint32_t>(x & 0x7fffU) << 13;  // exponent and significand in float32's places
  const std::uint32_t e = em & 0x0f800000U;
  // A subnormal m * 2^-24 is (1 + m/1024) * 2^-14 less 2^-14, both normal floats, exactly.
  const float subnormal = std::bit_cast<float>(em + (113U << 23)) - 0x1p-14F;
  const std::uint32_t bits = e == 0 ? std::bit_cast<std::uint32_t>(subnormal)
                             : e == 0x0f800000U ? em + (224U << 23)  // infinity or NaN: exponent all ones, payload kept
                                                : em + (112U << 23);  // rebias the exponent, 15 to 127
  return std::bit_cast<float>(sign | bits);
}

std::size_t narrow_values(FeatureDtype t, const float* from, std::size_t n, void* to) {
  auto* out = static_cast<std::uint16_t*>(to);
  switch (t) {
    case FeatureDtype::kFloat32: std::memcpy(to, from, n * sizeof(float)); return n;
    case FeatureDtype::kFloat16: std::transform(from, from + n, out, to_float16); break;
    case FeatureDtype::kBFloat16: std::transform(from, from + n, out, to_bfloat16); break;
  }
  // An infinity out of a finite value: both types' infinities have every exponent bit and a zero
  // significand.
  const std::uint16_t inf = t == FeatureDtype::kFloat16 ? 0x7c00U : 0x7f80U;
  for (std::size_t i = 0; i < n; ++i)
    if ((out[i] & 0x7fffU) == inf && std::isfinite(from[i])) return i;
  return n;
}

void throw_feature_overflow(FeatureDtype t, const std::string& what, float value) {
  throw InputError(what + ": feature value " + std::to_string(value) + " overflows " + feature_dtype_name(t) +
                   (t == FeatureDtype::kFloat16 ? " (largest 65504): store them as bfloat16 or float32, or scale them" : ""));
}

// Cloned for wider vector units: every fetched float16 or bfloat16 row is widened here.
SHARDGNN_VECTOR_CLONES
void widen_values(FeatureDtype t, const void* from, std::size_t n, float* to) {
  const auto* in = static_cast<const std::uint16_t*>(from);
  switch (t) {
    case FeatureDtype::kFloat32: std::memcpy(to, from, n * sizeof(float)); break;
    case FeatureDtype::kFloat16: std::transform(in, in + n, to, from_float16); break;
    case FeatureDtype::kBFloat16: std::transform(in, in + n, to, from_bfloat16); break;
  }
}

}  // namespace shardgnn
