// Configuration of a training run: a plain struct with documented defaults, filled by the CLI.
// No torch here, so that tools and tests can fill and check it without the torch headers.
#pragma once

#include <cstdint>
#include <string>

#include "model/spec.hpp"
#include "sampler/rebalance.hpp"

namespace shardgnn {

enum class OptimizerKind { kAdam, kSgd };
enum class LrSchedule {
  kNone,
  kStep,    // lr * lr_gamma every lr_step_epochs epochs
  kCosine,  // cosine from lr down to 0 over `epochs` epochs
};
// What the labels are read as: auto follows the data (label_bits.npy: label sets, labels.npy:
// classes); the others say what the user expects, and a dataset that differs is refused.
enum class TaskKind { kAuto, kClasses, kLabelSets, kLink };
// How link prediction scores a pair from its two embeddings (PairScorerImpl).
enum class ScorerKind { kDot, kMlp, kDistMult };

enum class EvalMode {
  kSampled,  // per-epoch validation through the sampler (same fanouts as training)
  kFull,     // per-epoch validation by full-neighbourhood layer-wise inference
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  double lr = 0.01;
  double weight_decay = 5e-4;  // L2, applied by the optimiser
  double momentum = 0.9;       // SGD only
  LrSchedule schedule = LrSchedule::kNone;
  int step_epochs = 0;         // kStep: decay period in epochs (0 = a third of `epochs`)
  double gamma = 0.1;          // kStep: decay factor
};

struct EvalConfig {
  int every = 1;               // validate every this many epochs (and after the last); the test set only at the end
  double fraction = 0;         // also validate every this fraction of an epoch's steps inside it (MLPerf's GNN: 0.05); reported, not selecting
  std::int64_t sample = 0;     // validate on at most this many validation nodes, the same ones every time (0 = all)
  int patience = 0;            // stop after this many validations without a better score (0 = never)
  EvalMode mode = EvalMode::kSampled;
  bool final_full = true;      // at the end, also evaluate the best model with full neighbourhoods
  bool final_test = true;      // at the end, score the best model on the test set at all (false: validation only)
  std::int64_t chunk = 0;      // dst nodes per block in full-neighbourhood inference (0: by the memory of a block's per-edge tensors, see kEvalBlockBytes)
};

// Where the run's files go.
struct RunFiles {
  std::string checkpoint_dir;  // "" = no checkpoints; else DIR/checkpoint.pt after every epoch
  bool resume = false;         // continue from DIR/checkpoint.pt when it exists
  bool overwrite = false;      // start over even though DIR/checkpoint.pt exists
  std::string weights;         // best weights as a Python-readable tensor dict ("" = DIR/weights.pt if DIR)
  std::string metrics;         // JSON lines, one per epoch and the result ("" = none)
  bool progress = true;        // rank 0 prints progress
};

// Load balance (see sampler/rebalance.hpp) and the seed paper's methods (Deshmukh et al. 2023).
struct BalanceConfig {
  // Between epochs the policy turns each rank's measured cost per seed (busy time / seeds,
  // smoothed) into a new share of the training seeds.
  RebalancePolicy rebalance = RebalancePolicy::kNone;
  double remote_seed_factor = 1.2;  // cost of a received seed relative to an own one (its first hop and features are remote)
  SeedSampling seed_sampling = SeedSampling::kShard;
  // Entropy-Aware Training's personalisation phase: after the shared model is scored, each rank
  // fine-tunes its own copy on its own shard's training nodes for this many epochs (no gradient
  // averaging) and scores its own test nodes with it (0 = none).
  int personalize_epochs = 0;
};

struct DeviceConfig {
  std::string name = "cpu";  // cpu, cuda or cuda:N ("cuda" = the node-local rank's GPU)
  int threads = 0;           // torch intra-op threads per rank (0 = OMP_NUM_THREADS, else the cores shared among the node's ranks)
};

// Levers for benchmarks and tests.
struct LeverConfig {
  int profile_steps = 0;  // record this many steps from the middle of the first epoch op by op (0 = none)
  int slow_rank = -1;     // --simulate-slowdown RANK:FACTOR: this rank's compute takes FACTOR times as long
  double slowdown = 1.0;
  int stop_epoch = -1;         // --simulate-stop EPOCH:STEP (1-based there): rank 0 asks to stop during
  std::int64_t stop_step = -1;  // this step of this epoch (0-based here), as a preemption would
};

// Link prediction (--task link): a batch is --batch training edges, each with `negatives`
// corrupted destinations; pairs are scored from their endpoints' embeddings.
struct LinkConfig {
  int negatives = 1;             // per positive
  ScorerKind scorer = ScorerKind::kDot;  // how a pair's two embeddings make its score
  bool select_mrr = false;       // validation MRR picks the best model, else AUC
  std::int64_t hits_k = 50;      // Hits@K with the ranking negatives
  std::int64_t embedding_dim = 0;  // the last layer's width (0: --hidden)
  // A batch's positives (both directions) cut from its blocks (DGL's exclude="reverse_id");
  // false keeps them, as the full-batch graph auto-encoders (GAE) do: a published protocol, for
  // comparison. Held-out edges are out of the graph either way.
  bool exclude_positives = true;
};


// The learnable rows of a typed graph's node types without features (DistDGL's DistEmbedding
// with its sparse optimizers), at the model's hidden width.
struct EmbeddingConfig {
  SparseOptimizer optimizer = SparseOptimizer::kAdam;
  double lr = 0.01;  // DGL's R-GCN examples' sparse learning rate
};

struct TrainConfig {
  TaskKind task = TaskKind::kAuto;
  LinkConfig link;
  ModelConfig model;
  EmbeddingConfig embedding;
  OptimizerConfig optim;
  int epochs = 20;
  std::uint64_t seed = 0;  // weights, dropout and (through SamplerConfig::seed) sampling
  EvalConfig eval;
  RunFiles files;
  BalanceConfig balance;
  DeviceConfig device;
  LeverConfig levers;
};

// A task's own defaults for the options a run does not name (train --help lists them). Node
// classification: Kipf & Welling's dropout 0.5 and weight decay 5e-4 (TrainConfig's). Link
// prediction: the graph auto-encoder's (Kipf & Welling 2016, GAE), no dropout and no weight decay:
// with the node defaults, GCN 32-16 on Cora (200 epochs, batch 256) reached test AUC 0.78. A
// batch is 1024 of the task's examples (seeds, or training edges), and a link batch draws one
// corrupted destination per edge, as PyG's LinkNeighborLoader and GAE do.
struct TaskDefaults {
  double dropout = 0.5;
  double weight_decay = 5e-4;
  int batch = 1024;
  int negatives = 0;  // link prediction's corrupted destinations per training edge
};
TaskDefaults task_defaults(TaskKind t);
// The defaults of every task, one line each, for train --help.
std::string task_defaults_text();

// "RANK:FACTOR" -> (rank, factor). The rank must be >= 0 (checked against the job size by the
// trainer) and the factor >= 1 (it slows a rank down); anything else is an InputError.
void parse_slowdown(const std::string& text, int& rank, double& factor);
// "--simulate-stop 3:2" -> epoch 2, step 1 (0-based); else an InputError naming the option.
void parse_simulated_stop(const std::string& text, int& epoch, std::int64_t& step);

// Names <-> enums. Unknown names are InputErrors listing the valid ones.
ModelKind parse_model(const std::string& name);
std::string model_name(ModelKind m);
OptimizerKind parse_optimizer(const std::string& name);
std::string optimizer_name(OptimizerKind o);
LrSchedule parse_lr_schedule(const std::string& name);
std::string lr_schedule_name(LrSchedule s);
TaskKind parse_task(const std::string& name);
std::string task_name(TaskKind t);
ScorerKind parse_scorer(const std::string& name);
std::string scorer_name(ScorerKind s);
EvalMode parse_eval_mode(const std::string& name);
std::string eval_mode_name(EvalMode m);
SparseOptimizer parse_sparse_optimizer(const std::string& name);
std::string sparse_optimizer_name(SparseOptimizer o);

// Throws InputError for a configuration no run can use (hidden 0, lr <= 0, dropout outside
// [0, 1), GAT hidden not divisible by heads, ...), naming the option.
void validate(const TrainConfig& c);

// The learning rate of `epoch` under the schedule.
double lr_at(const TrainConfig& c, int epoch);

}  // namespace shardgnn
