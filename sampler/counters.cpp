// The counters' differences (and the feature counters' sums), field by field. Boost.PFR walks the
// fields, so a counter added to (or removed from) a struct needs no edit here.
#include <boost/pfr.hpp>
#include <tuple>
#include <utility>

#include "sampler/feature_store.hpp"
#include "sampler/sampler.hpp"

namespace shardgnn {

namespace {
template <class T>
T fieldwise(const T& a, const T& b, int sign) {
  T out = a;
  auto o = boost::pfr::structure_tie(out);
  const auto y = boost::pfr::structure_to_tuple(b);
  [&]<std::size_t... I>(std::index_sequence<I...>) { ((std::get<I>(o) += sign * std::get<I>(y)), ...); }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
  return out;
}
}  // namespace

SamplerCounters operator-(const SamplerCounters& a, const SamplerCounters& b) { return fieldwise(a, b, -1); }
FeatureCounters operator-(const FeatureCounters& a, const FeatureCounters& b) { return fieldwise(a, b, -1); }
FeatureCounters operator+(const FeatureCounters& a, const FeatureCounters& b) { return fieldwise(a, b, 1); }

}  // namespace shardgnn
