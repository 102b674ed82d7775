// What training reports, defined once: the per-epoch record and its per-rank shares, with the
// Boost.JSON conversions that make one line of the metrics file. `train --metrics` writes them
// with value_from and `shardgnn report` reads them back with value_to. No torch and no MPI, so
// the report links this without the trainer.
#pragma once

#include <boost/json/conversion.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardgnn {

// Which task's scores a ClassMetrics holds (the metrics file's "task"): what it measures beyond
// accuracy and macro-F1, and which of them is its headline.
enum class ScoreKind { kClasses, kLabelSets, kLinks };
std::string score_kind_name(ScoreKind k);  // "classes", "label-sets", "link": --task's names

struct ClassMetrics {
  ScoreKind kind = ScoreKind::kClasses;
  std::int64_t count = 0;  // labelled examples evaluated
  double accuracy = 0;
  // Mean F1 over the classes present in the truth or the predictions; for label sets over every
  // label (0 for one neither present nor predicted), as scikit-learn's f1_score does for each.
  double macro_f1 = 0;
  // kLabelSets: F1 over every (node, label) entry, the selection score (`accuracy` is then the
  // entries right).
  double micro_f1 = 0;
  // kLinks (count: the positive pairs): AUC and AP over the positives and their negatives (AUC
  // -1 without negatives), and with ranking negatives (hits_k > 0) OGB's MRR and Hits@hits_k.
  double auc = -1, ap = 0, mrr = 0, hits = 0;
  std::int64_t hits_k = 0;
  bool ranked() const noexcept { return kind == ScoreKind::kLinks && hits_k > 0; }
};

// One rank's share of an epoch's training (evaluation excluded): what the rebalancer measures.
struct RankEpoch {
  int rank = 0;
  std::int64_t seeds = 0, steps = 0, sampled_edges = 0;
  std::int64_t remote_sampled_rows = 0;  // frontier nodes sampled for us by their owners
  std::int64_t node_local_sampled_rows = 0;  // frontier nodes of node-local ranks, sampled here from their shards
  std::int64_t remote_rows = 0, cache_hits = 0;  // input feature rows owned on other nodes, and those the cache served
  std::int64_t node_local_rows = 0;              // input feature rows owned by another rank on this node, read from its shard
  double bytes_sent = 0, bytes_received = 0;
  double sample_s = 0, fetch_s = 0;  // the producer's work (the prefetch thread's, when there is one)
  double batch_wait_s = 0;           // the training loop waiting for its next batch
  double compute_s = 0;              // forward, backward, optimiser (and a simulated slowdown)
  double allreduce_s = 0;            // in the gradient all-reduce: mostly waiting for slower ranks
  double busy_s = 0;                 // own work: compute + sampling and fetching outside collectives (no waiting)
  double slowdown = 1;               // --simulate-slowdown factor on this rank
  double eval_s = 0, train_s = 0;    // this rank's evaluation time and training wall time (not written: the epoch's mean / max are)
};

// A validation inside an epoch (EvalConfig::fraction): after `step` steps, the task's selection
// score on the validation sample, and the epoch's training seconds until then (slowest rank).
struct InnerValidation {
  std::int64_t step = 0;
  double score = 0, train_s = 0;
};

struct EpochRecord {
  int epoch = 0;
  double lr = 0;
  double loss = 0;        // mean training loss over the epoch's examples, all ranks
  double train_acc = 0;   // on the training batches as trained (dropout on)
  bool evaluated = false;  // the epoch was validated (val holds the result)
  bool tested = false;     // and tested (test holds it): older trainers tested every validated epoch
  ClassMetrics val, test;
  double epoch_s = 0;      // wall time of the epoch (training + evaluation), slowest rank
  double sample_wait_s = 0, compute_s = 0, allreduce_s = 0, eval_s = 0;  // mean over ranks
  double bytes_sent = 0, bytes_received = 0;  // sampler + feature exchanges, all ranks
  std::int64_t steps = 0;
  double train_s = 0;       // wall time of the training steps (no evaluation), slowest rank
  std::vector<RankEpoch> ranks;  // every rank, in rank order
  double imbalance = 0;     // max over ranks of busy_s / mean busy_s (1 = perfectly balanced)
  std::string rebalance;    // the policy that assigned this epoch's seeds ("" = none)
  std::vector<std::int64_t> plan_load;  // seeds each rank was assigned
  std::int64_t moved = 0;   // seeds trained by a rank other than their owner
  std::string blas_core;    // the BLAS kernels the ranks computed with (OpenBLAS's core name; "" = unknown)
  std::string gemm;         // what ran the layers' float32 CPU products ("oneDNN sgemm", "torch"; "" = unknown)
  std::vector<InnerValidation> inner;  // validations inside the epoch, in step order (their time is in eval_s)
};

// A run's outcome, written by rank 0 as the metrics file's last line ({"result": {...}}) once the
// best model is scored: benchmarks and scripts read the result here, never from the console.
struct ResultRecord {
  int best_epoch = -1;           // 0-based; -1: never validated
  double best_val = -1;          // its validation score, the one that selected it (-1: none)
  std::string score = "accuracy";  // what best_val is (the task's selection score)
  bool stopped_early = false;    // --patience ended training
  std::optional<ClassMetrics> sampled;  // the best model's test scores through the sampler (training fanouts)
  std::optional<ClassMetrics> full;     // the same with full neighbourhoods
  std::vector<ClassMetrics> rank_test;  // each rank's own test nodes, in rank order (the final full, else sampled, scoring)
  std::optional<ClassMetrics> personalized;  // --personalize: each rank's test nodes scored by its own fine-tuned copy
  bool personalized_full = false;  // ... over full neighbourhoods (else the training fanouts)
  double train_s = 0, sampled_s = 0, full_s = 0;  // wall time of the epochs and of the two final scorings
  std::string op_profile;          // --profile-ops: rank 0's table, as train prints it
};

// The score a benchmark reports for a finished run: full neighbourhoods when scored, else sampled;
// nullopt when the test set was not scored (--no-test).
std::optional<ClassMetrics> final_test(const ResultRecord& r);

// The score that selects, as the commands print it: "accuracy 0.7950", or a label-set model's
// "micro-F1 0.6123".
std::string headline_score(const ClassMetrics& m);

// The JSON forms. Reading checks what it reads and throws InputError (without a file: the reader
// of a file adds it) naming the key, e.g. "key 'ranks[1].busy_s': missing, expected a number".
// Fields that older trainers did not write default as in the structs; epoch and epoch_s are
// required, and so is every field of a per-rank entry except node_local_rows,
// node_local_sampled_rows and slowdown. Per-rank entries come back sorted by rank, checked to
// cover ranks 0..K-1 once each.
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const ClassMetrics& m);
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const RankEpoch& r);
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const EpochRecord& r);
EpochRecord tag_invoke(boost::json::value_to_tag<EpochRecord>, const boost::json::value& v);
// The result line's inner object (the value of its "result" key); only best_epoch is required.
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const ResultRecord& r);
ResultRecord tag_invoke(boost::json::value_to_tag<ResultRecord>, const boost::json::value& v);

}  // namespace shardgnn
