#include "trainer/records.hpp"

#include <boost/json.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "datasets/error.hpp"

namespace json = boost::json;

namespace shardgnn {

// ---------------------------------------------------------------------------------------------
// Writing: the keys and their order are the metrics file's format.

std::string score_kind_name(ScoreKind k) {
  switch (k) {
    case ScoreKind::kClasses: return "classes";
    case ScoreKind::kLabelSets: return "label-sets";
    case ScoreKind::kLinks: return "link";
  }
  return "?";
}

void tag_invoke(json::value_from_tag, json::value& v, const ClassMetrics& m) {
  json::object o{{"task", score_kind_name(m.kind)}, {"acc", m.accuracy}, {"macro_f1", m.macro_f1}, {"count", m.count}};
  if (m.kind == ScoreKind::kLabelSets) o["micro_f1"] = m.micro_f1;
  if (m.kind == ScoreKind::kLinks) {
    if (m.auc >= 0) o["auc"] = m.auc;  // not measured without negatives
    o["ap"] = m.ap;
  }
  if (m.ranked()) {
    o["mrr"] = m.mrr;
    o["hits"] = m.hits;
    o["hits_k"] = m.hits_k;
  }
  v = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& v, const RankEpoch& k) {
  v = json::object{{"rank", k.rank},
                   {"seeds", k.seeds},
                   {"steps", k.steps},
                   {"sampled_edges", k.sampled_edges},
                   {"remote_sampled_rows", k.remote_sampled_rows},
                   {"node_local_sampled_rows", k.node_local_sampled_rows},
                   {"remote_rows", k.remote_rows},
                   {"cache_hits", k.cache_hits},
                   {"node_local_rows", k.node_local_rows},
                   {"bytes_sent", k.bytes_sent},
                   {"bytes_received", k.bytes_received},
                   {"time_s", {{"sample", k.sample_s}, {"fetch", k.fetch_s}, {"batch_wait", k.batch_wait_s}, {"compute", k.compute_s}, {"allreduce", k.allreduce_s}}},
                   {"busy_s", k.busy_s},
                   {"slowdown", k.slowdown}};
}

void tag_invoke(json::value_from_tag, json::value& v, const EpochRecord& r) {
  json::object o{{"epoch", r.epoch},
                 {"lr", r.lr},
                 {"loss", r.loss},
                 {"train_acc", r.train_acc},
                 {"steps", r.steps},
                 {"epoch_s", r.epoch_s},
                 {"time_s", {{"sample_wait", r.sample_wait_s}, {"compute", r.compute_s}, {"allreduce", r.allreduce_s}, {"eval", r.eval_s}}},
                 {"bytes_sent", r.bytes_sent},
                 {"bytes_received", r.bytes_received}};
  o["train_s"] = r.train_s;
  if (!r.blas_core.empty()) o["blas_core"] = r.blas_core;
  if (!r.gemm.empty()) o["gemm"] = r.gemm;
  if (!r.ranks.empty()) {
    o["ranks"] = json::value_from(r.ranks);
    o["imbalance"] = r.imbalance;
  }
  if (!r.rebalance.empty())
    o["rebalance"] = json::object{{"policy", r.rebalance}, {"seeds", json::array(r.plan_load.begin(), r.plan_load.end())}, {"moved", r.moved}};
  if (r.evaluated) {
    o["val_acc"] = r.val.accuracy;
    o["val"] = json::value_from(r.val);
  }
  if (r.tested) {
    o["test_acc"] = r.test.accuracy;
    o["test"] = json::value_from(r.test);
  }
  if (!r.inner.empty()) {
    json::array inner;
    for (const InnerValidation& i : r.inner) inner.push_back(json::object{{"step", i.step}, {"score", i.score}, {"train_s", i.train_s}});
    o["inner_val"] = std::move(inner);
  }
  v = std::move(o);
}

void tag_invoke(json::value_from_tag, json::value& v, const ResultRecord& r) {
  json::object o{{"best_epoch", r.best_epoch}};
  if (r.best_epoch >= 0) o["best_val"] = r.best_val;  // a model never validated has no score
  o["score"] = r.score;
  o["stopped_early"] = r.stopped_early;
  if (r.sampled) o["sampled"] = json::value_from(*r.sampled);
  if (r.full) o["full"] = json::value_from(*r.full);
  if (!r.rank_test.empty()) o["rank_test"] = json::value_from(r.rank_test);
  if (r.personalized) {
    o["personalized"] = json::value_from(*r.personalized);
    o["personalized_full"] = r.personalized_full;
  }
  o["time_s"] = json::object{{"train", r.train_s}, {"sampled", r.sampled_s}, {"full", r.full_s}};
  if (!r.op_profile.empty()) o["op_profile"] = r.op_profile;
  v = std::move(o);
}

std::string headline_score(const ClassMetrics& m) {
  char buf[96];
  switch (m.kind) {
    case ScoreKind::kLinks: {
      const int n = std::snprintf(buf, sizeof buf, "AUC %.4f, AP %.4f", m.auc, m.ap);
      if (m.ranked()) std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n), ", MRR %.4f, Hits@%lld %.4f", m.mrr, static_cast<long long>(m.hits_k), m.hits);
      break;
    }
    case ScoreKind::kLabelSets: std::snprintf(buf, sizeof buf, "micro-F1 %.4f", m.micro_f1); break;
    case ScoreKind::kClasses: std::snprintf(buf, sizeof buf, "accuracy %.4f", m.accuracy); break;
  }
  return buf;
}

std::optional<ClassMetrics> final_test(const ResultRecord& r) { return r.full ? r.full : r.sampled; }

// ---------------------------------------------------------------------------------------------
// Reading: every value checked, errors naming the key path ("ranks[1].time_s.compute").

namespace {

[[noreturn]] void fail(const std::string& what) { throw InputError(what); }

std::string key_name(const std::string& prefix, const char* key) { return "key '" + prefix + key + "'"; }

// The offending value as written (Boost.JSON would print 0.5 as 5E-1).
std::string found(const json::value& v) {
  if (!v.is_double()) return quote_token(json::serialize(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v.get_double());
  return quote_token(buf);
}

// A number (integer or not) under `key`; required unless `dflt` is given (null counts as absent).
// Negative values are refused: every field is a count, a size, a rate or a duration.
double number(const json::object& o, const char* key, const std::string& prefix = "", std::optional<double> dflt = std::nullopt) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) {
    if (dflt) return *dflt;
    fail(key_name(prefix, key) + ": missing, expected a number");
  }
  if (!v->is_number()) fail(key_name(prefix, key) + ": expected a number, found " + found(*v));
  const double d = v->to_number<double>();
  if (!std::isfinite(d) || d < 0) fail(key_name(prefix, key) + ": expected a non-negative number, found " + found(*v));
  return d;
}

// A count held as an integer, written by any JSON writer as a number (1e6, 300.0).
std::int64_t to_count(double d) { return d >= 9.2e18 ? INT64_MAX : std::llround(d); }

std::int64_t count(const json::object& o, const char* key, const std::string& prefix = "", std::optional<double> dflt = std::nullopt) {
  const json::value* v = o.if_contains(key);
  if (v && v->is_int64() && v->get_int64() >= 0) return v->get_int64();  // exact beyond 2^53
  return to_count(number(o, key, prefix, dflt));
}

std::int64_t integer(const json::object& o, const char* key, const std::string& prefix = "") {
  const json::value* v = o.if_contains(key);
  if (!v) fail(key_name(prefix, key) + ": missing, expected a non-negative integer");
  if (v->is_int64() && v->get_int64() >= 0) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(v->get_uint64());
  fail(key_name(prefix, key) + ": expected a non-negative integer, found " + found(*v));
}

const json::object* object(const json::object& o, const char* key, const std::string& prefix, bool required) {
  const json::value* v = o.if_contains(key);
  if (!v) {
    if (required) fail(key_name(prefix, key) + ": missing, expected an object");
    return nullptr;
  }
  if (!v->is_object()) fail(key_name(prefix, key) + ": expected an object, found " + found(*v));
  return &v->get_object();
}

// `where` names the entry in errors: "ranks[1]".
RankEpoch read_rank(const json::value& v, const std::string& where) {
  if (!v.is_object()) fail(where + ": expected an object per rank, found " + found(v));
  const json::object& o = v.get_object();
  const std::string p = where + ".";
  RankEpoch r;
  r.rank = static_cast<int>(std::min<std::int64_t>(integer(o, "rank", p), INT32_MAX));
  r.seeds = count(o, "seeds", p);
  r.steps = count(o, "steps", p);
  r.sampled_edges = count(o, "sampled_edges", p);
  r.remote_sampled_rows = count(o, "remote_sampled_rows", p);
  r.remote_rows = count(o, "remote_rows", p);
  r.cache_hits = count(o, "cache_hits", p);
  r.node_local_rows = count(o, "node_local_rows", p, 0.0);
  r.node_local_sampled_rows = count(o, "node_local_sampled_rows", p, 0.0);
  r.bytes_sent = number(o, "bytes_sent", p);
  r.bytes_received = number(o, "bytes_received", p);
  const json::object& t = *object(o, "time_s", p, true);
  const std::string tp = p + "time_s.";
  r.sample_s = number(t, "sample", tp);
  r.fetch_s = number(t, "fetch", tp);
  r.batch_wait_s = number(t, "batch_wait", tp);
  r.compute_s = number(t, "compute", tp);
  r.allreduce_s = number(t, "allreduce", tp);
  r.busy_s = number(o, "busy_s", p);
  r.slowdown = number(o, "slowdown", p, 1.0);
  return r;
}

// The "ranks" array: one entry per rank 0..K-1, in any order; returned in rank order.
std::vector<RankEpoch> read_ranks(const json::value& ranks) {
  if (!ranks.is_array() || ranks.get_array().empty()) fail("key 'ranks': expected a non-empty array of per-rank objects, found " + found(ranks));
  const json::array& a = ranks.get_array();
  std::vector<RankEpoch> out;
  std::vector<bool> seen(a.size(), false);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string where = "ranks[" + std::to_string(i) + "]";
    RankEpoch r = read_rank(a[i], where);
    if (static_cast<std::size_t>(r.rank) >= a.size())
      fail(where + ".rank: " + std::to_string(r.rank) + " is out of range, expected 0.." + std::to_string(a.size() - 1) + " (one entry per rank)");
    if (seen[static_cast<std::size_t>(r.rank)]) fail(where + ".rank: rank " + std::to_string(r.rank) + " appears twice, expected one entry per rank");
    seen[static_cast<std::size_t>(r.rank)] = true;
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const RankEpoch& x, const RankEpoch& y) { return x.rank < y.rank; });
  return out;
}

void read_rebalance(const json::object& rb, EpochRecord& e) {
  const json::value* policy = rb.if_contains("policy");
  if (!policy || !policy->is_string()) fail("key 'rebalance.policy': expected a string" + (policy ? ", found " + found(*policy) : std::string()));
  e.rebalance = std::string(policy->get_string());
  e.moved = count(rb, "moved", "rebalance.", 0.0);
  if (const json::value* seeds = rb.if_contains("seeds")) {
    if (!seeds->is_array()) fail("key 'rebalance.seeds': expected an array of per-rank seed counts, found " + found(*seeds));
    for (const json::value& s : seeds->get_array()) {
      if (!s.is_number() || s.to_number<double>() < 0) fail("key 'rebalance.seeds': expected non-negative numbers, found " + found(s));
      e.plan_load.push_back(s.is_int64() ? s.get_int64() : to_count(s.to_number<double>()));
    }
  }
}

// What a metrics object scores beyond accuracy and macro-F1: "task" names it (files from before
// it said so by the keys they had, which is how they are read).
void read_task_scores(const json::object& o, const std::string& p, ClassMetrics& m) {
  if (const json::value* t = o.if_contains("task")) {
    const std::string name = t->is_string() ? std::string(t->get_string()) : "";
    if (name == "classes") m.kind = ScoreKind::kClasses;
    else if (name == "label-sets") m.kind = ScoreKind::kLabelSets;
    else if (name == "link") m.kind = ScoreKind::kLinks;
    else fail(key_name(p, "task") + ": expected classes, label-sets or link, found " + found(*t));
  } else {
    m.kind = o.contains("auc") || o.contains("ap") ? ScoreKind::kLinks : o.contains("micro_f1") ? ScoreKind::kLabelSets : ScoreKind::kClasses;
  }
  if (m.kind == ScoreKind::kLabelSets) m.micro_f1 = number(o, "micro_f1", p);
  if (m.kind != ScoreKind::kLinks) return;
  m.auc = number(o, "auc", p, -1.0);
  m.ap = number(o, "ap", p);
  m.hits_k = count(o, "hits_k", p, 0.0);
  if (m.hits_k > 0) {
    m.mrr = number(o, "mrr", p);
    m.hits = number(o, "hits", p);
  }
}

// An evaluated split: the accuracy under "<split>_acc" (older files have only that), the rest
// under "<split>".
void read_split(const json::object& o, const char* split, double accuracy, ClassMetrics& m) {
  m.accuracy = accuracy;
  if (const json::object* s = object(o, split, "", false)) {
    const std::string p = std::string(split) + ".";
    m.macro_f1 = number(*s, "macro_f1", p, 0.0);
    m.count = count(*s, "count", p, 0.0);
    read_task_scores(*s, p, m);
  }
}

// A ClassMetrics object ("acc", "macro_f1", "count"); `p` prefixes its keys in errors.
ClassMetrics read_metrics(const json::object& m, const std::string& p) {
  ClassMetrics c;
  c.accuracy = number(m, "acc", p);
  c.macro_f1 = number(m, "macro_f1", p, 0.0);
  c.count = count(m, "count", p, 0.0);
  read_task_scores(m, p, c);
  return c;
}

// The same under `key` of `o`, or nullopt when absent.
std::optional<ClassMetrics> read_metrics(const json::object& o, const char* key, const std::string& prefix) {
  const json::object* m = object(o, key, prefix, false);
  if (!m) return std::nullopt;
  return read_metrics(*m, prefix + key + ".");
}

bool flag(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return false;
  if (!v->is_bool()) fail(key_name("result.", key) + ": expected true or false, found " + found(*v));
  return v->get_bool();
}

}  // namespace

ResultRecord tag_invoke(json::value_to_tag<ResultRecord>, const json::value& v) {
  if (!v.is_object()) fail("key 'result': expected an object, found " + found(v));
  const json::object& o = v.get_object();
  ResultRecord r;
  const json::value* best = o.if_contains("best_epoch");
  if (!best || !best->is_int64() || best->get_int64() < -1 || best->get_int64() > INT32_MAX)
    fail("key 'result.best_epoch': expected an integer >= -1" + (best ? ", found " + found(*best) : std::string(", missing")));
  r.best_epoch = static_cast<int>(best->get_int64());
  if (r.best_epoch >= 0) r.best_val = number(o, "best_val", "result.");
  if (const json::value* score = o.if_contains("score")) {
    if (!score->is_string()) fail("key 'result.score': expected a string, found " + found(*score));
    r.score = std::string(score->get_string());
  }
  r.stopped_early = flag(o, "stopped_early");
  r.sampled = read_metrics(o, "sampled", "result.");
  r.full = read_metrics(o, "full", "result.");
  if (const json::value* ranks = o.if_contains("rank_test")) {
    if (!ranks->is_array()) fail("key 'result.rank_test': expected an array of per-rank scores, found " + found(*ranks));
    for (std::size_t i = 0; i < ranks->get_array().size(); ++i) {
      const json::value& k = ranks->get_array()[i];
      const std::string where = "result.rank_test[" + std::to_string(i) + "]";
      if (!k.is_object()) fail("key '" + where + "': expected an object, found " + found(k));
      r.rank_test.push_back(read_metrics(k.get_object(), where + "."));
    }
  }
  r.personalized = read_metrics(o, "personalized", "result.");
  r.personalized_full = flag(o, "personalized_full");
  if (const json::object* t = object(o, "time_s", "result.", false)) {
    r.train_s = number(*t, "train", "result.time_s.", 0.0);
    r.sampled_s = number(*t, "sampled", "result.time_s.", 0.0);
    r.full_s = number(*t, "full", "result.time_s.", 0.0);
  }
  if (const json::value* table = o.if_contains("op_profile")) {
    if (!table->is_string()) fail("key 'result.op_profile': expected a string, found " + found(*table));
    r.op_profile = std::string(table->get_string());
  }
  return r;
}

EpochRecord tag_invoke(json::value_to_tag<EpochRecord>, const json::value& v) {
  if (!v.is_object()) fail("expected a JSON object (one epoch per line), found " + found(v));
  const json::object& o = v.get_object();
  EpochRecord e;
  e.epoch = static_cast<int>(std::min<std::int64_t>(integer(o, "epoch"), INT32_MAX));
  e.epoch_s = number(o, "epoch_s");
  e.loss = number(o, "loss", "", 0.0);
  e.train_acc = number(o, "train_acc", "", 0.0);
  e.steps = count(o, "steps", "", 0.0);
  e.train_s = number(o, "train_s", "", 0.0);
  if (const json::object* t = object(o, "time_s", "", false)) {
    e.sample_wait_s = number(*t, "sample_wait", "time_s.", 0.0);
    e.compute_s = number(*t, "compute", "time_s.", 0.0);
    e.allreduce_s = number(*t, "allreduce", "time_s.", 0.0);
    e.eval_s = number(*t, "eval", "time_s.", 0.0);
  }
  e.bytes_sent = number(o, "bytes_sent", "", 0.0);
  e.bytes_received = number(o, "bytes_received", "", 0.0);
  if (const json::value* core = o.if_contains("blas_core")) {
    if (!core->is_string()) fail("key 'blas_core': expected a string, found " + found(*core));
    e.blas_core = std::string(core->get_string());
  }
  if (const json::value* gemm = o.if_contains("gemm")) {
    if (!gemm->is_string()) fail("key 'gemm': expected a string, found " + found(*gemm));
    e.gemm = std::string(gemm->get_string());
  }
  // Only evaluated epochs have accuracies (null counts as absent).
  const json::value* val = o.if_contains("val_acc");
  const json::value* test = o.if_contains("test_acc");
  const bool has_val = val && !val->is_null(), has_test = test && !test->is_null();
  const double val_acc = has_val ? number(o, "val_acc") : 0, test_acc = has_test ? number(o, "test_acc") : 0;
  if (const json::value* ranks = o.if_contains("ranks")) e.ranks = read_ranks(*ranks);
  if (const json::object* rb = object(o, "rebalance", "", false)) read_rebalance(*rb, e);
  e.lr = number(o, "lr", "", 0.0);
  e.imbalance = number(o, "imbalance", "", 0.0);
  e.evaluated = has_val || has_test;
  e.tested = has_test;
  if (e.evaluated) {
    read_split(o, "val", val_acc, e.val);
    read_split(o, "test", test_acc, e.test);
  }
  if (const json::value* inner = o.if_contains("inner_val")) {
    if (!inner->is_array()) fail("key 'inner_val': expected an array, found " + found(*inner));
    for (const json::value& x : inner->get_array()) {
      if (!x.is_object()) fail("key 'inner_val': expected objects, found " + found(x));
      e.inner.push_back({count(x.get_object(), "step", "inner_val."), number(x.get_object(), "score", "inner_val."), number(x.get_object(), "train_s", "inner_val.")});
    }
  }
  return e;
}

}  // namespace shardgnn
