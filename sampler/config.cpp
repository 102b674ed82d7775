#include "sampler/config.hpp"

#include <charconv>

#include "datasets/error.hpp"

namespace shardgnn {

std::vector<int> parse_fanouts(const std::string& text) {
  if (text.empty()) throw InputError("--fanouts is empty, expected comma-separated neighbour counts such as 15,10,5 (-1 = all)");
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    int v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size())
      throw InputError("--fanouts item " + std::to_string(out.size() + 1) + " is " + quote_token(item) + ", expected an integer >= 1 or -1 (all)");
    if (v == 0 || v < -1)
      throw InputError("--fanouts item " + std::to_string(out.size() + 1) + " is " + std::to_string(v) + ", expected an integer >= 1 or -1 (all)");
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

CachePolicy parse_cache_policy(const std::string& name) {
  if (name == "none") return CachePolicy::kNone;
  if (name == "degree") return CachePolicy::kDegree;
  if (name == "presample" || name == "vip") return CachePolicy::kPresample;
  throw InputError("unknown --cache-policy '" + name + "', expected none, degree or presample");
}

std::string cache_policy_name(CachePolicy p) {
  switch (p) {
    case CachePolicy::kNone: return "none";
    case CachePolicy::kDegree: return "degree";
    case CachePolicy::kPresample: return "presample";
  }
  return "?";
}

void validate(const SamplerConfig& c) {
  if (c.fanouts.empty()) throw InputError("no fanouts given");
  for (int f : c.fanouts)
    if (f == 0 || f < -1) throw InputError("fanout " + std::to_string(f) + ", expected >= 1 or -1 (all)");
  if (c.batch_size < 1) throw InputError("--batch must be at least 1, got " + std::to_string(c.batch_size));
  if (c.prefetch < 0) throw InputError("--prefetch must be >= 0, got " + std::to_string(c.prefetch));
  if (c.cache_mb < 0) throw InputError("--cache-mb must be >= 0");
  if (c.cache_fraction < 0 || c.cache_fraction > 1) throw InputError("--cache-fraction must be in [0, 1]");
  if (c.presample_batches < 1) throw InputError("--presample-batches must be at least 1");
}

}  // namespace shardgnn
