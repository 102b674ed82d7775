// Link prediction's ranking metrics, over scores (any monotone scale: logits or probabilities).
// AUC and AP follow scikit-learn's roc_auc_score and average_precision_score (the protocol of Kipf
// and Welling's graph auto-encoders); MRR and Hits@K follow OGB's evaluator for per-positive
// negatives (ogbl-citation2): a positive's rank among its own negatives is 1 + the mean of its
// optimistic and pessimistic counts of negatives scored above it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace shardgnn {

// The area under the ROC curve: the probability that a positive scores above a negative, ties
// counted half (Mann-Whitney's U over |pos| x |neg|). NaN when either side is empty.
double roc_auc(std::span<const float> pos, std::span<const float> neg);

// Average precision: sum over the distinct thresholds, from the highest score down, of the recall
// gained times the precision there (tied scores form one threshold), as scikit-learn computes it.
// NaN without positives.
double average_precision(std::span<const float> pos, std::span<const float> neg);

// Sums of the per-positive ranking metrics, to add across ranks before dividing by `count`.
struct RankingSums {
  double count = 0, reciprocal_rank = 0;
  std::vector<double> hits;  // one per K of the `ks` given to add_ranks
};
// Adds the positives' ranks: pos[i] against neg[i * k .. (i + 1) * k).
void add_ranks(std::span<const float> pos, std::span<const float> neg, std::int64_t k, std::span<const std::int64_t> ks, RankingSums& sums);

}  // namespace shardgnn
