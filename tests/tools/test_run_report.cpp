// The run report's reading and summary (tools/run_report.hpp) on metrics lines written inline.
#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include "datasets/error.hpp"
#include "tools/run_report.hpp"

using namespace shardgnn;

namespace {

// One rank's entry: busy = wait + compute, as the trainer records it. Rank 2 also read 40 rows
// from same-node shards; the others' entries lack the key, as files written before it did.
std::string rank_json(int rank, double seeds, double steps, double wait, double compute, double allreduce) {
  return "{\"rank\":" + std::to_string(rank) + (rank == 2 ? ",\"node_local_rows\":40" : "") + ",\"seeds\":" + std::to_string(seeds) + ",\"steps\":" + std::to_string(steps) +
         ",\"sampled_edges\":1000,\"remote_sampled_rows\":10,\"remote_rows\":100,\"cache_hits\":25,\"bytes_sent\":1e6,\"bytes_received\":2e6,"
         "\"time_s\":{\"sample\":0.1,\"fetch\":0.1,\"batch_wait\":" +
         std::to_string(wait) + ",\"compute\":" + std::to_string(compute) + ",\"allreduce\":" + std::to_string(allreduce) +
         "},\"busy_s\":" + std::to_string(wait + compute) + ",\"slowdown\":1}";
}

std::string message_of(const std::string& text) {
  try {
    parse_run_metrics(text, "m.jsonl");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("run report: per-epoch imbalance and per-rank totals", "[report]") {
  // Three ranks, listed out of order; epoch 1 is logged twice (a resumed run): the later line wins.
  const std::string text =
      "{\"epoch\":0,\"epoch_s\":5,\"loss\":1,\"steps\":4,\"val_acc\":0.5,\"test_acc\":0.45,\"ranks\":[" + rank_json(2, 300, 4, 0.5, 3.5, 0) + "," +
      rank_json(0, 100, 4, 0.5, 1.5, 2) + "," + rank_json(1, 200, 4, 0.5, 2.5, 1) + "]}\n" +
      "{\"epoch\":1,\"epoch_s\":9,\"ranks\":[" + rank_json(0, 1, 1, 9, 9, 0) + "," + rank_json(1, 1, 1, 9, 9, 0) + "," + rank_json(2, 1, 1, 9, 9, 0) + "]}\n" +
      "\n" +
      "{\"epoch\":1,\"epoch_s\":4,\"loss\":0.5,\"steps\":4,\"val_acc\":0.6,\"test_acc\":0.4,\"rebalance\":{\"policy\":\"cost\",\"seeds\":[200,200,200],\"moved\":100},"
      "\"ranks\":[" +
      rank_json(0, 200, 4, 0.5, 2.5, 0.5) + "," + rank_json(1, 200, 4, 1, 2.5, 0) + "," + rank_json(2, 200, 4, 0.5, 2.5, 0.5) + "]}\n";
  const RunMetrics run = parse_run_metrics(text, "dir/m.jsonl");
  REQUIRE(run.epochs.size() == 2);
  CHECK(run.superseded == 1);
  CHECK(run.epochs[1].line == 4);
  CHECK(run.epochs[0].ranks[0].rank == 0);
  CHECK(run.dir == "dir");
  const RunSummary s = summarize_run(run);
  CHECK(s.ranks == 3);
  CHECK(s.epochs_with_ranks == 2);
  CHECK(s.total_epoch_s == Approx(9));
  REQUIRE(s.per_epoch.size() == 2);
  // Epoch 0: busy 2, 3, 4 -> max 4, mean 3.
  CHECK(s.per_epoch[0].max_busy_s == Approx(4));
  CHECK(s.per_epoch[0].mean_busy_s == Approx(3));
  CHECK(s.per_epoch[0].ratio == Approx(4.0 / 3));
  CHECK(s.per_epoch[0].slowest_rank == 2);
  CHECK(s.per_epoch[0].max_allreduce_s == Approx(2));
  // Epoch 1: busy 3, 3.5, 3 -> max 3.5 on rank 1.
  CHECK(s.per_epoch[1].max_busy_s == Approx(3.5));
  CHECK(s.per_epoch[1].mean_busy_s == Approx(9.5 / 3));
  CHECK(s.per_epoch[1].slowest_rank == 1);
  REQUIRE(s.per_epoch[1].rebalance);
  CHECK(s.per_epoch[1].rebalance->moved == 100);
  CHECK(s.per_epoch[1].rebalance->seeds.size() == 3);
  CHECK(s.worst_epoch == 0);
  CHECK(s.worst_ratio == Approx(4.0 / 3));
  CHECK(s.mean_ratio == Approx((4.0 / 3 + 3.5 / (9.5 / 3)) / 2));
  // Per rank: rank 0 busy 2 + 3 over 2 epochs and 8 steps; seeds (100 + 200) / 2.
  const RankSummary& r0 = s.per_rank[0];
  CHECK(r0.epochs == 2);
  CHECK(r0.seeds_per_epoch == Approx(150));
  CHECK(r0.busy_per_epoch_s == Approx(2.5));
  CHECK(r0.busy_per_step_s == Approx(5.0 / 8));
  CHECK(r0.allreduce_s == Approx(2.5));
  CHECK(r0.bytes_moved == Approx(6e6));
  CHECK(r0.slowest_epochs == 0);
  CHECK(s.per_rank[2].slowest_epochs == 1);
  CHECK(s.per_rank[1].slowest_epochs == 1);
  CHECK(r0.node_local_rows == 0);
  CHECK(s.per_rank[2].node_local_rows == Approx(80));
  // Accuracy: best validation at epoch 1, with the test accuracy of that epoch; best test at 0.
  CHECK(*s.best_val == Approx(0.6));
  CHECK(s.best_val_epoch == 1);
  CHECK(*s.test_at_best_val == Approx(0.4));
  CHECK(*s.best_test == Approx(0.45));
  CHECK(s.best_test_epoch == 0);
  CHECK(s.last_eval_epoch == 1);
  // The renderings carry the numbers.
  const std::string table = render_run_table(s);
  CHECK(table.find("4.000") != std::string::npos);
  CHECK(table.find("same-node rows") != std::string::npos);
  CHECK(table.find("cost, moved 100 seeds") != std::string::npos);
  const std::string svg = render_run_svg(s, run);
  CHECK(svg.rfind("<svg ", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("rank 2: busy") != std::string::npos);
  const auto json = run_summary_json(s).as_object();
  CHECK(json.at("per_epoch").as_array().size() == 2);
}

TEST_CASE("run report: lines without per-rank data", "[report]") {
  const RunMetrics run = parse_run_metrics("{\"epoch\":0,\"epoch_s\":1.5,\"loss\":2,\"time_s\":{\"sample_wait\":0.25,\"compute\":1}}\n", "m.jsonl");
  const RunSummary s = summarize_run(run);
  CHECK(s.ranks == 0);
  CHECK(s.per_rank.empty());
  CHECK_FALSE(s.per_epoch[0].has_ranks);
  CHECK(s.per_epoch[0].compute_s == Approx(1));
  CHECK_FALSE(s.best_val);
  CHECK(render_run_table(s).find("per-rank     absent") != std::string::npos);
  CHECK(render_run_svg(s, run).find("no per-rank data") != std::string::npos);
}

TEST_CASE("run report: errors name the file and the line", "[report]") {
  CHECK(message_of("") == "m.jsonl: line 1: empty file, expected one JSON object per line (one per epoch)");
  CHECK(message_of("\n  \n") == "m.jsonl: line 1: empty file, expected one JSON object per line (one per epoch)");
  CHECK(message_of("{\"epoch\":0,\"epoch_s\":1}\n{\"epoch\":1,") .rfind("m.jsonl: line 2, column", 0) == 0);
  CHECK(message_of("{\"epoch\":0,\"epoch_s\":1}\n7\n") == "m.jsonl: line 2: expected a JSON object (one epoch per line), found '7'");
  CHECK(message_of("{\"epoch_s\":1}") == "m.jsonl: line 1: key 'epoch': missing, expected a non-negative integer");
  CHECK(message_of("{\"epoch\":0.5,\"epoch_s\":1}") == "m.jsonl: line 1: key 'epoch': expected a non-negative integer, found '0.5'");
  CHECK(message_of("{\"epoch\":0,\"epoch_s\":true}") == "m.jsonl: line 1: key 'epoch_s': expected a number, found 'true'");
  const std::string r0 = rank_json(0, 1, 1, 1, 1, 0);
  CHECK(message_of("{\"epoch\":0,\"epoch_s\":1,\"ranks\":[" + r0 + "," + rank_json(2, 1, 1, 1, 1, 0) + "]}").find("line 1: ranks[1].rank: 2 is out of range") !=
        std::string::npos);
  CHECK(message_of("{\"epoch\":0,\"epoch_s\":1,\"ranks\":[{\"rank\":0}]}") == "m.jsonl: line 1: key 'ranks[0].seeds': missing, expected a number");
  CHECK(message_of("{\"epoch\":0,\"epoch_s\":1,\"rebalance\":{\"moved\":3}}") == "m.jsonl: line 1: key 'rebalance.policy': expected a string");
}

TEST_CASE("run report: a run resumed on another rank count shows the last count's ranks", "[report]") {
  const std::string r0 = rank_json(0, 1, 1, 1, 1, 0), r1 = rank_json(1, 1, 1, 1, 1, 0);
  const RunMetrics run = parse_run_metrics("{\"epoch\":0,\"epoch_s\":1,\"ranks\":[" + r0 + "," + r1 + "]}\n{\"epoch\":1,\"epoch_s\":1,\"ranks\":[" + r0 + "]}\n", "m.jsonl");
  const RunSummary s = summarize_run(run);
  CHECK(s.epochs == 2);
  CHECK(s.ranks == 1);
  CHECK(s.epochs_with_ranks == 1);
  CHECK(s.per_rank.at(0).epochs == 1);
  CHECK(render_run_svg(s, run).find("1 ranks") != std::string::npos);
}

TEST_CASE("a run's result line is read back, and one that later epochs follow is not the outcome", "[report]") {
  const std::string epoch0 = "{\"epoch\":0,\"epoch_s\":1.5}\n";
  const std::string result =
      "{\"result\":{\"best_epoch\":0,\"best_val\":0.5,\"score\":\"accuracy\",\"stopped_early\":false,"
      "\"full\":{\"acc\":0.75,\"macro_f1\":0.5,\"count\":4},\"rank_test\":[{\"acc\":1,\"count\":1},{\"acc\":0.5,\"count\":2}],"
      "\"time_s\":{\"train\":1,\"sampled\":0,\"full\":0.25}}}\n";
  const RunMetrics run = parse_run_metrics(epoch0 + result, "m.jsonl");
  REQUIRE(run.epochs.size() == 1);
  REQUIRE(run.result);
  CHECK(run.result->best_epoch == 0);
  REQUIRE(run.result->full);
  CHECK(run.result->full->accuracy == 0.75);
  CHECK(run.result->full->count == 4);
  CHECK_FALSE(run.result->sampled);
  REQUIRE(run.result->rank_test.size() == 2);
  CHECK(run.result->rank_test[1].count == 2);
  CHECK(final_test(*run.result)->accuracy == 0.75);
  // A run resumed after it finished, with more epochs, has no outcome until it finishes again.
  CHECK_FALSE(parse_run_metrics(epoch0 + result + "{\"epoch\":1,\"epoch_s\":1.5}\n", "m.jsonl").result);
  // Never validated: best_val -1 as the trainer writes it.
  CHECK(parse_run_metrics(epoch0 + "{\"result\":{\"best_epoch\":-1,\"best_val\":-1}}\n", "m.jsonl").result->best_val == -1);
  CHECK_THROWS_WITH(parse_run_metrics(epoch0 + "{\"result\":{\"best_epoch\":\"x\"}}\n", "m.jsonl"),
                    Catch::Contains("m.jsonl: line 2: key 'result.best_epoch': expected an integer >= -1"));
}

TEST_CASE("validations inside an epoch are read back in order, and a bad entry names the key", "[report]") {
  const RunMetrics run = parse_run_metrics(
      "{\"epoch\":0,\"epoch_s\":2,\"train_s\":1.5,\"val_acc\":0.5,\"inner_val\":[{\"step\":3,\"score\":0.25,\"train_s\":0.5},{\"step\":6,\"score\":0.375,\"train_s\":1}]}\n",
      "m.jsonl");
  REQUIRE(run.epochs[0].inner.size() == 2);
  CHECK(run.epochs[0].inner[1].step == 6);
  CHECK(run.epochs[0].inner[1].score == 0.375);
  CHECK(run.epochs[0].inner[0].train_s == 0.5);
  CHECK(parse_run_metrics("{\"epoch\":0,\"epoch_s\":2}\n", "m.jsonl").epochs[0].inner.empty());
  CHECK_THAT(message_of("{\"epoch\":0,\"epoch_s\":2,\"inner_val\":[{\"step\":3,\"train_s\":1}]}\n"), Catch::Matchers::Contains("score"));
}

TEST_CASE("a score names its task, and files from before it say so by their keys", "[report]") {
  const auto scores = [](const std::string& full) {
    const std::string text = "{\"epoch\":0,\"epoch_s\":1}\n{\"result\":{\"best_epoch\":0,\"best_val\":0.5,\"full\":" + full + "}}\n";
    return *parse_run_metrics(text, "m.jsonl").result->full;
  };
  // Written by this build: each task's record round-trips with its kind and its scores.
  ClassMetrics link;
  link.kind = ScoreKind::kLinks;
  link.accuracy = 0.75;
  link.count = 3;
  link.auc = 0.9;
  link.ap = 0.8;
  link.hits_k = 10;
  link.mrr = 0.5;
  link.hits = 0.625;
  const ClassMetrics back = scores(boost::json::serialize(boost::json::value_from(link)));
  CHECK(back.kind == ScoreKind::kLinks);
  CHECK((back.auc == 0.9 && back.ap == 0.8 && back.mrr == 0.5 && back.hits == 0.625 && back.hits_k == 10));
  CHECK(headline_score(back) == "AUC 0.9000, AP 0.8000, MRR 0.5000, Hits@10 0.6250");
  ClassMetrics sets;
  sets.kind = ScoreKind::kLabelSets;
  sets.micro_f1 = 0.25;
  CHECK(scores(boost::json::serialize(boost::json::value_from(sets))).micro_f1 == 0.25);
  CHECK(headline_score(sets) == "micro-F1 0.2500");
  CHECK(headline_score(ClassMetrics{}) == "accuracy 0.0000");
  // Before "task": the keys present.
  CHECK(scores("{\"acc\":0.5,\"auc\":0.7,\"ap\":0.6}").kind == ScoreKind::kLinks);
  CHECK(scores("{\"acc\":0.5,\"micro_f1\":0.4}").kind == ScoreKind::kLabelSets);
  CHECK(scores("{\"acc\":0.5}").kind == ScoreKind::kClasses);
  CHECK_THROWS_WITH(scores("{\"task\":\"regression\",\"acc\":0.5}"), Catch::Contains("key 'result.full.task': expected classes, label-sets or link"));
  // A label-set score without its micro-F1 is damaged, not a single-label one.
  CHECK_THROWS_WITH(scores("{\"task\":\"label-sets\",\"acc\":0.5}"), Catch::Contains("key 'result.full.micro_f1': missing"));
}
