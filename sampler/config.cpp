#include "sampler/config.hpp"

#include <boost/algorithm/string/classification.hpp>
#include <boost/algorithm/string/split.hpp>

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
namespace {
// [hop][relation]: `base` along every relation, then the overrides ("cites=5,5,5;topic=0,0,0").
std::vector<std::vector<int>> with_overrides(const std::vector<int>& base, const std::string& overrides, const GraphSchema& schema) {
  const std::size_t R = schema.relations().size();
  std::vector<std::vector<int>> out(base.size(), std::vector<int>(R));
  for (std::size_t h = 0; h < base.size(); ++h) std::fill(out[h].begin(), out[h].end(), base[h]);
  if (overrides.empty()) return out;
  std::vector<std::string> items;
  boost::algorithm::split(items, overrides, boost::algorithm::is_any_of(";"));
  for (const std::string& item : items) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw InputError("--fanouts item '" + item + "': expected relation=fanouts, e.g. cites=5,5,5");
    const std::string name = item.substr(0, eq);
    int found = -1, matches = 0;
    for (std::size_t r = 0; r < R; ++r)
      if (schema.relations()[r].name == name || schema.relation_label(static_cast<int>(r)) == name) found = static_cast<int>(r), ++matches;
    if (matches == 0) {
      std::string known;
      for (std::size_t r = 0; r < R; ++r) known += (known.empty() ? "" : ", ") + schema.relations()[r].name;
      throw InputError("--fanouts item '" + item + "': no relation named '" + name + "' (" + known + ")");
    }
    if (matches > 1) throw InputError("--fanouts item '" + item + "': several relations are named '" + name + "'; use its full label, src__name__dst");
    const std::vector<int> f = parse_fanouts(item.substr(eq + 1));
    if (f.size() != base.size())
      throw InputError("--fanouts item '" + item + "': " + std::to_string(f.size()) + " hops, the default has " + std::to_string(base.size()));
    for (std::size_t h = 0; h < f.size(); ++h) out[h][static_cast<std::size_t>(found)] = f[h];
  }
  return out;
}
}  // namespace

std::vector<std::vector<int>> parse_relation_fanouts(const std::string& text, const GraphSchema& schema) {
  std::string overrides;
  const std::vector<int> base = parse_fanouts_option(text, overrides);
  return with_overrides(base, overrides, schema);
}

std::vector<int> parse_fanouts_option(const std::string& text, std::string& overrides) {
  const std::size_t semi = text.find(';');
  overrides = semi == std::string::npos ? std::string() : text.substr(semi + 1);
  const std::string base = text.substr(0, semi);
  if (base.find('=') != std::string::npos) throw InputError("--fanouts '" + text + "': expected the default fanouts first (\"15,10,5;cites=5,5,5\")");
  return parse_fanouts(base);
}

void resolve_relation_fanouts(SamplerConfig& c, const GraphSchema& schema) {
  if (!schema.typed()) {
    if (!c.relation_overrides.empty())
      throw InputError("--fanouts '..;" + c.relation_overrides + "': per-relation fanouts need a typed graph, and this one has one node type");
    return;
  }
  c.relation_fanouts = with_overrides(c.fanouts, c.relation_overrides, schema);
}

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
