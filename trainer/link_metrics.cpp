#include "trainer/link_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardgnn {

double roc_auc(std::span<const float> pos, std::span<const float> neg) {
  if (pos.empty() || neg.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<float> n(neg.begin(), neg.end());
  std::sort(n.begin(), n.end());
  // For each positive: the negatives below it, and half of those equal to it.
  double u = 0;
  for (const float p : pos) {
    const auto lo = std::lower_bound(n.begin(), n.end(), p), hi = std::upper_bound(lo, n.end(), p);
    u += static_cast<double>(lo - n.begin()) + 0.5 * static_cast<double>(hi - lo);
  }
  return u / (static_cast<double>(pos.size()) * static_cast<double>(neg.size()));
}

double average_precision(std::span<const float> pos, std::span<const float> neg) {
  if (pos.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<std::pair<float, bool>> all;
  all.reserve(pos.size() + neg.size());
  for (const float p : pos) all.emplace_back(p, true);
  for (const float x : neg) all.emplace_back(x, false);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  double tp = 0, fp = 0, ap = 0, recall = 0;
  const auto P = static_cast<double>(pos.size());
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    for (; j < all.size() && all[j].first == all[i].first; ++j) (all[j].second ? tp : fp) += 1;
    ap += (tp / P - recall) * tp / (tp + fp);
    recall = tp / P;
    i = j;
  }
  return ap;
}

void add_ranks(std::span<const float> pos, std::span<const float> neg, std::int64_t k, std::span<const std::int64_t> ks, RankingSums& sums) {
  sums.hits.resize(ks.size(), 0);
  for (std::size_t i = 0; i < pos.size(); ++i) {
    double above = 0, tied = 0;
    for (std::int64_t j = 0; j < k; ++j) {
      const float x = neg[i * static_cast<std::size_t>(k) + static_cast<std::size_t>(j)];
      above += x > pos[i];
      tied += x == pos[i];
    }
    const double rank = 1 + above + 0.5 * tied;  // OGB: 1 + (optimistic + pessimistic) / 2
    sums.count += 1;
    sums.reciprocal_rank += 1 / rank;
    for (std::size_t h = 0; h < ks.size(); ++h) sums.hits[h] += rank <= static_cast<double>(ks[h]);
  }
}

}  // namespace shardgnn
