#include "sampler/config.hpp"

#include "datasets/error.hpp"
#include "datasets/names.hpp"

namespace shardgnn {

namespace {
constexpr EnumName<CachePolicy> kCachePolicies[] = {
    {CachePolicy::kNone, "none"}, {CachePolicy::kDegree, "degree"}, {CachePolicy::kPresample, "presample"}, {CachePolicy::kPresample, "vip"}};
constexpr EnumName<WireDtype> kWireDtypes[] = {{WireDtype::kFloat32, "float32"}, {WireDtype::kBFloat16, "bf16"}, {WireDtype::kBFloat16, "bfloat16"}};
}  // namespace

WireDtype parse_wire_dtype(const std::string& name) { return parse_enum(kWireDtypes, name, "--wire-dtype"); }
std::string wire_dtype_name(WireDtype d) { return enum_name(kWireDtypes, d); }
CachePolicy parse_cache_policy(const std::string& name) { return parse_enum(kCachePolicies, name, "--cache-policy"); }
std::string cache_policy_name(CachePolicy p) { return enum_name(kCachePolicies, p); }

void validate(const SamplerConfig& c) {
  if (c.fanouts.empty()) throw InputError("no fanouts given");
  for (int f : c.fanouts)
    if (f < -1) throw InputError("fanout " + std::to_string(f) + ", expected >= 0 (0: none, the node's own features only) or -1 (all)");
  if (c.batch_size < 1) throw InputError("--batch must be at least 1, got " + std::to_string(c.batch_size));
  if (c.prefetch < 0) throw InputError("--prefetch must be >= 0, got " + std::to_string(c.prefetch));
  if (c.cache_mb < 0) throw InputError("--cache-mb must be >= 0");
  if (c.cache_fraction < 0 || c.cache_fraction > 1) throw InputError("--cache-fraction must be in [0, 1]");
  if (c.cache_memory_share < 0 || c.cache_memory_share > 1) throw InputError("cache memory share must be in [0, 1]");
  if (c.presample_batches < 1) throw InputError("--presample-batches must be at least 1");
}

}  // namespace shardgnn
