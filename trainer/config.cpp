#include "trainer/config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <numbers>
#include <sstream>

#include "datasets/error.hpp"
#include "datasets/names.hpp"

namespace shardgnn {

namespace {
constexpr EnumName<ModelKind> kModels[] = {{ModelKind::kSage, "sage"}, {ModelKind::kGcn, "gcn"}, {ModelKind::kGat, "gat"},
                                        {ModelKind::kRgcn, "rgcn"}, {ModelKind::kRgat, "rgat"}, {ModelKind::kSage, "graphsage"}};
constexpr EnumName<OptimizerKind> kOptimizers[] = {{OptimizerKind::kAdam, "adam"}, {OptimizerKind::kSgd, "sgd"}};
constexpr EnumName<LrSchedule> kLrSchedules[] = {{LrSchedule::kNone, "none"}, {LrSchedule::kStep, "step"}, {LrSchedule::kCosine, "cosine"}};
constexpr EnumName<EvalMode> kEvalModes[] = {{EvalMode::kSampled, "sampled"}, {EvalMode::kFull, "full"}};
constexpr EnumName<TaskKind> kTasks[] = {{TaskKind::kAuto, "auto"}, {TaskKind::kClasses, "classes"}, {TaskKind::kLabelSets, "label-sets"}, {TaskKind::kLink, "link"}};
constexpr EnumName<ScorerKind> kScorers[] = {{ScorerKind::kDot, "dot"}, {ScorerKind::kMlp, "mlp"}, {ScorerKind::kDistMult, "distmult"}};
constexpr EnumName<SparseOptimizer> kSparseOptimizers[] = {{SparseOptimizer::kAdam, "adam"}, {SparseOptimizer::kAdagrad, "adagrad"}};
}  // namespace

ModelKind parse_model(const std::string& name) {
  try {
    return parse_enum(kModels, name, "--model");
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + ", or a model spec file (FILE.json)");
  }
}
std::string model_name(ModelKind m) { return enum_name(kModels, m); }
OptimizerKind parse_optimizer(const std::string& name) { return parse_enum(kOptimizers, name, "--optimizer"); }
std::string optimizer_name(OptimizerKind o) { return enum_name(kOptimizers, o); }
LrSchedule parse_lr_schedule(const std::string& name) { return parse_enum(kLrSchedules, name, "--lr-schedule"); }
std::string lr_schedule_name(LrSchedule s) { return enum_name(kLrSchedules, s); }
TaskKind parse_task(const std::string& name) { return parse_enum(kTasks, name, "--task"); }
std::string task_name(TaskKind t) { return enum_name(kTasks, t); }
ScorerKind parse_scorer(const std::string& name) { return parse_enum(kScorers, name, "--scorer"); }
std::string scorer_name(ScorerKind s) { return enum_name(kScorers, s); }
EvalMode parse_eval_mode(const std::string& name) { return parse_enum(kEvalModes, name, "--eval"); }
std::string eval_mode_name(EvalMode m) { return enum_name(kEvalModes, m); }
SparseOptimizer parse_sparse_optimizer(const std::string& name) { return parse_enum(kSparseOptimizers, name, "--embedding-optimizer"); }
std::string sparse_optimizer_name(SparseOptimizer o) { return enum_name(kSparseOptimizers, o); }

namespace {
std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

bool valid_device(const std::string& d) {
  if (d == "cpu" || d == "cuda") return true;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5) return false;
  int index = 0;
  auto [p, ec] = std::from_chars(d.data() + 5, d.data() + d.size(), index);
  return ec == std::errc() && p == d.data() + d.size() && index >= 0;
}
}  // namespace

void validate(const TrainConfig& c) {
  // The built-ins' heads split their hidden width; a spec file's layers are checked with the spec.
  const bool builtin = c.model.spec.empty();
  const auto attention = [&](ModelKind k) { return builtin && (k == ModelKind::kGat || k == ModelKind::kRgat); };
  const auto relational = [&](ModelKind k) { return builtin && (k == ModelKind::kRgcn || k == ModelKind::kRgat); };
  if (c.link.negatives < 0) throw InputError("--negatives must be 0 or more, got " + std::to_string(c.link.negatives));
  if (c.link.embedding_dim < 0) throw InputError("--embedding-dim must be 0 (--hidden) or more, got " + std::to_string(c.link.embedding_dim));
  if (attention(c.model.kind) && c.link.embedding_dim > 0 && c.link.embedding_dim % c.model.heads != 0)
    throw InputError("--embedding-dim " + std::to_string(c.link.embedding_dim) + " is not divisible by --heads " + std::to_string(c.model.heads));
  if (c.model.hidden < 1) throw InputError("--hidden must be at least 1, got " + std::to_string(c.model.hidden));
  if (c.model.heads < 1) throw InputError("--heads must be at least 1, got " + std::to_string(c.model.heads));
  if (c.model.bases < 0) throw InputError("--bases must be 0 (a weight per relation) or more, got " + std::to_string(c.model.bases));
  if (c.model.bases > 0 && (!builtin || c.model.kind != ModelKind::kRgcn)) throw InputError("--bases is R-GCN's basis decomposition (--model rgcn)");
  if (attention(c.model.kind) && c.model.hidden % c.model.heads != 0)
    throw InputError("--hidden " + std::to_string(c.model.hidden) + " is not divisible by --heads " + std::to_string(c.model.heads) +
                     " (GAT splits the hidden width between the heads)");
  if (!(c.model.dropout >= 0 && c.model.dropout < 1)) throw InputError("--dropout must be in [0, 1), got " + num(c.model.dropout));
  if (!(c.embedding.lr > 0) || !std::isfinite(c.embedding.lr)) throw InputError("--embedding-lr must be > 0, got " + num(c.embedding.lr));
  if (relational(c.model.kind) && c.model.precision != Precision::kFloat32)
    throw InputError("--precision bf16 runs sage, gcn and gat; R-GCN and R-GAT compute in float32 (leave the option out)");
  if (!(c.optim.lr > 0) || !std::isfinite(c.optim.lr)) throw InputError("--lr must be > 0, got " + num(c.optim.lr));
  if (!(c.optim.weight_decay >= 0) || !std::isfinite(c.optim.weight_decay)) throw InputError("--weight-decay must be >= 0, got " + num(c.optim.weight_decay));
  if (!(c.optim.momentum >= 0 && c.optim.momentum < 1)) throw InputError("--momentum must be in [0, 1), got " + num(c.optim.momentum));
  if (c.optim.step_epochs < 0) throw InputError("--lr-step must be >= 0");
  if (c.balance.personalize_epochs < 0) throw InputError("--personalize must be >= 0, got " + std::to_string(c.balance.personalize_epochs));
  if (c.balance.personalize_epochs > 0 && !c.eval.final_test) throw InputError("--personalize scores the test set, which --no-test leaves out");
  if (!(c.optim.gamma > 0 && c.optim.gamma <= 1)) throw InputError("--lr-gamma must be in (0, 1], got " + num(c.optim.gamma));
  if (c.epochs < 1) throw InputError("--epochs must be at least 1, got " + std::to_string(c.epochs));
  if (!(c.eval.fraction >= 0 && c.eval.fraction < 1)) throw InputError("--eval-fraction must be in [0, 1), got " + num(c.eval.fraction));
  if (c.eval.every < 1) throw InputError("--eval-every must be at least 1, got " + std::to_string(c.eval.every));
  if (c.eval.sample < 0) throw InputError("--eval-sample must be 0 (all) or a node count, got " + std::to_string(c.eval.sample));
  if (c.eval.patience < 0) throw InputError("--patience must be >= 0, got " + std::to_string(c.eval.patience));
  if (c.eval.chunk < 0) throw InputError("--eval-chunk must be 0 (blocks by edge count) or a node count, got " + std::to_string(c.eval.chunk));
  if (c.device.threads < 0) throw InputError("--threads must be >= 0");
  if (c.levers.profile_steps < 0) throw InputError("--profile-ops must be >= 0, got " + std::to_string(c.levers.profile_steps));
  if (!valid_device(c.device.name)) throw InputError("unknown --device " + quote_token(c.device.name) + ", expected cpu, cuda or cuda:N");
  // Kept for GPUs, where no figure says it does not pay yet; on the CPUs measured it gained nothing.
  if (c.model.precision == Precision::kBFloat16 && c.device.name == "cpu")
    throw InputError("--precision bf16 runs with --device cuda only (on the CPU it gains nothing over fp32: docs/results/training.md); use --precision fp32");
  if (c.files.resume && c.files.checkpoint_dir.empty()) throw InputError("--resume needs --checkpoint-dir or --run-dir");
  if (!(c.balance.remote_seed_factor >= 1) || !std::isfinite(c.balance.remote_seed_factor))
    throw InputError("--remote-seed-factor must be >= 1, got " + num(c.balance.remote_seed_factor));
  if (!(c.levers.slowdown >= 1) || !std::isfinite(c.levers.slowdown)) throw InputError("--simulate-slowdown: the factor must be >= 1, got " + num(c.levers.slowdown));
}

void parse_simulated_stop(const std::string& text, int& epoch, std::int64_t& step) {
  const auto colon = text.find(':');
  const std::string what = "--simulate-stop " + quote_token(text) + ": expected EPOCH:STEP, both from 1, e.g. 3:2 (a stop asked for during step 2 of epoch 3)";
  const auto number = [&](const std::string& t) {
    if (t.empty() || t.size() > 9 || !std::all_of(t.begin(), t.end(), [](unsigned char ch) { return std::isdigit(ch); }) || std::stoll(t) < 1) throw InputError(what);
    return std::stoll(t);
  };
  if (colon == std::string::npos) throw InputError(what);
  epoch = static_cast<int>(number(text.substr(0, colon)) - 1);
  step = number(text.substr(colon + 1)) - 1;
}

void parse_slowdown(const std::string& text, int& rank, double& factor) {
  const auto colon = text.find(':');
  const std::string what = "--simulate-slowdown " + quote_token(text) + ": expected RANK:FACTOR, e.g. 1:2 (rank 1 computes at half speed)";
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) throw InputError(what);
  const std::string r = text.substr(0, colon), f = text.substr(colon + 1);
  if (!std::all_of(r.begin(), r.end(), [](unsigned char ch) { return std::isdigit(ch); }) || r.size() > 9) throw InputError(what + " (bad rank)");
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(f, &used);
  } catch (const std::exception&) {
    throw InputError(what + " (bad factor)");
  }
  if (used != f.size()) throw InputError(what + " (bad factor)");
  if (!(value >= 1) || !std::isfinite(value)) throw InputError("--simulate-slowdown " + quote_token(text) + ": the factor must be >= 1, got " + f);
  rank = std::stoi(r);
  factor = value;
}

TaskDefaults task_defaults(TaskKind t) {
  if (t == TaskKind::kLink) return {0.0, 0.0, 1024, 1};
  return {};
}

std::string task_defaults_text() {
  const auto line = [](const char* tasks, const TaskDefaults& d, const char* examples) {
    std::ostringstream s;
    s << tasks << ": --dropout " << d.dropout << " --weight-decay " << d.weight_decay << " --batch " << d.batch << " (" << examples << ")";
    if (d.negatives > 0) s << " --negatives " << d.negatives;
    return s.str();
  };
  return "task defaults where the option is not given: " + line("classes and label-sets", task_defaults(TaskKind::kClasses), "seeds") + "; " +
         line("link", task_defaults(TaskKind::kLink), "training edges");
}

double lr_at(const TrainConfig& c, int epoch) {
  switch (c.optim.schedule) {
    case LrSchedule::kNone: return c.optim.lr;
    case LrSchedule::kStep: {
      const int period = c.optim.step_epochs > 0 ? c.optim.step_epochs : std::max(1, c.epochs / 3);
      return c.optim.lr * std::pow(c.optim.gamma, epoch / period);
    }
    case LrSchedule::kCosine: return 0.5 * c.optim.lr * (1 + std::cos(std::numbers::pi * epoch / c.epochs));
  }
  return c.optim.lr;
}

}  // namespace shardgnn
