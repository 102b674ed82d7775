// Split specs and split assignment: the per-class split of Shchur et al. (2018) and random splits
// by fractions, drawn only from labelled nodes and reproducible from the seed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "datasets/error.hpp"
#include "datasets/splits.hpp"

using namespace shardgnn;

namespace {

// A dataset with no edges whose labels are `labels` (-1 = unlabelled).
Dataset labelled(const std::vector<std::int64_t>& labels, std::int64_t num_classes) {
  Dataset ds;
  ds.name = "toy";
  ds.graph = CsrGraph(Array<EdgeId>(std::vector<EdgeId>(labels.size() + 1, 0)), Array<NodeId>(std::vector<NodeId>{}));
  ds.num_classes = num_classes;
  ds.labels = Array<std::int64_t>(std::vector<std::int64_t>(labels));
  return ds;
}

// Class sizes 50, 60, 70 interleaved, with every seventh node unlabelled.
std::vector<std::int64_t> three_classes() {
  std::vector<std::int64_t> labels;
  std::vector<std::int64_t> left = {50, 60, 70};
  for (std::size_t i = 0; left[0] + left[1] + left[2] > 0; ++i) {
    if (i % 7 == 3) {
      labels.push_back(-1);
      continue;
    }
    const auto c = static_cast<std::int64_t>(i % 3);
    if (left[static_cast<std::size_t>(c)] > 0) {
      labels.push_back(c);
      --left[static_cast<std::size_t>(c)];
    }
  }
  return labels;
}

std::vector<NodeId> vec(const IntArray& a) { return std::vector<NodeId>(a.begin(), a.end()); }

// Every labelled node in exactly one split, no unlabelled node in any, each split sorted.
void check_partition(const Dataset& ds) {
  std::vector<int> seen(ds.labels.size(), 0);
  for (const IntArray* split : {&ds.train_idx, &ds.val_idx, &ds.test_idx}) {
    CHECK(std::is_sorted(split->begin(), split->end()));
    for (NodeId u : *split) {
      REQUIRE(u >= 0);
      REQUIRE(static_cast<std::size_t>(u) < ds.labels.size());
      ++seen[static_cast<std::size_t>(u)];
    }
  }
  for (std::size_t i = 0; i < ds.labels.size(); ++i) {
    INFO("node " << i << " label " << ds.labels[i]);
    REQUIRE(seen[i] == (ds.labels[i] >= 0 ? 1 : 0));
  }
}

std::vector<std::int64_t> per_class_count(const Dataset& ds, const IntArray& split) {
  std::vector<std::int64_t> count(static_cast<std::size_t>(ds.num_classes), 0);
  for (NodeId u : split) ++count[static_cast<std::size_t>(ds.labels[static_cast<std::size_t>(u)])];
  return count;
}

}  // namespace

TEST_CASE("parse_split_spec reads random and per-class specs", "[splits]") {
  const SplitSpec r = parse_split_spec("random:0.6,0.2", 17);
  CHECK(r.kind == SplitSpec::Kind::kRandom);
  CHECK(r.train_fraction == 0.6);
  CHECK(r.val_fraction == 0.2);
  CHECK(r.seed == 17);

  const SplitSpec p = parse_split_spec("per-class:20,30", 5);
  CHECK(p.kind == SplitSpec::Kind::kPerClass);
  CHECK(p.train_per_class == 20);
  CHECK(p.val_per_class == 30);
  CHECK(p.seed == 5);

  CHECK(parse_split_spec("random:1,0", 0).train_fraction == 1.0);
  CHECK(parse_split_spec("random:0.7,0.3", 0).val_fraction == 0.3);
  CHECK(parse_split_spec("per-class:0,0", 0).kind == SplitSpec::Kind::kPerClass);
}

TEST_CASE("parse_split_spec refuses anything else and says what it expected", "[splits]") {
  const std::string bad = GENERATE(as<std::string>{}, "", "none", "random", "random:", "random:0.6", "random:0.6,",
                                   "random:,0.2", "random:0.6,0.2,0.1", "random:a,b", "random:0.6;0.2", "random: 0.6,0.2",
                                   "random:0.8,0.3", "random:-0.1,0.2", "random:1.5,0", "random:nan,0.1",
                                   "per-class:20", "per-class:-1,5", "per-class:1.5,2", "per-class:20,30x",
                                   "Random:0.6,0.2", "perclass:20,30", "foo:1,2");
  INFO("spec '" << bad << "'");
  CHECK_THROWS_AS(parse_split_spec(bad, 0), InputError);
  try {
    parse_split_spec(bad, 0);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find("split") != std::string::npos);
  }
  CHECK_THROWS_WITH(parse_split_spec("foo:1,2", 0), Catch::Contains("random:") && Catch::Contains("per-class:"));
}

TEST_CASE("per-class splits take exactly the asked counts from every class", "[splits]") {
  Dataset ds = labelled(three_classes(), 3);
  assign_split(ds, parse_split_spec("per-class:20,15", 3));
  check_partition(ds);
  CHECK(per_class_count(ds, ds.train_idx) == std::vector<std::int64_t>{20, 20, 20});
  CHECK(per_class_count(ds, ds.val_idx) == std::vector<std::int64_t>{15, 15, 15});
  CHECK(per_class_count(ds, ds.test_idx) == std::vector<std::int64_t>{15, 25, 35});

  // Drawn at random, not the lowest ids of each class.
  std::vector<NodeId> lowest;
  for (std::int64_t c = 0; c < 3; ++c) {
    std::int64_t taken = 0;
    for (std::size_t i = 0; i < ds.labels.size() && taken < 20; ++i)
      if (ds.labels[i] == c) lowest.push_back(static_cast<NodeId>(i)), ++taken;
  }
  std::sort(lowest.begin(), lowest.end());
  CHECK(vec(ds.train_idx) != lowest);

  // A class exactly as large as train + val leaves nothing for test, which is fine.
  Dataset exact = labelled(three_classes(), 3);
  assign_split(exact, parse_split_spec("per-class:30,20", 3));
  check_partition(exact);
  CHECK(per_class_count(exact, exact.test_idx) == std::vector<std::int64_t>{0, 10, 20});
}

TEST_CASE("per-class splits refuse a class that is too small, naming it", "[splits]") {
  Dataset ds = labelled(three_classes(), 3);
  CHECK_THROWS_AS(assign_split(ds, parse_split_spec("per-class:40,11", 0)), InputError);
  CHECK_THROWS_WITH(assign_split(ds, parse_split_spec("per-class:40,11", 0)), Catch::Contains("class 0") && Catch::Contains("50"));
  // An empty class (no node carries label 3) is too small too.
  Dataset gap = labelled(three_classes(), 4);
  CHECK_THROWS_WITH(assign_split(gap, parse_split_spec("per-class:1,1", 0)), Catch::Contains("class 3") && Catch::Contains("0"));
}

TEST_CASE("random splits cut the labelled nodes by the fractions", "[splits]") {
  Dataset ds = labelled(three_classes(), 3);
  const std::int64_t labelled_nodes = 180;
  const double train = GENERATE(0.0, 0.1, 0.6, 1.0);
  const double val = GENERATE(0.0, 0.2);
  if (train + val > 1.0) return;
  SplitSpec spec;
  spec.kind = SplitSpec::Kind::kRandom;
  spec.train_fraction = train;
  spec.val_fraction = val;
  spec.seed = 9;
  assign_split(ds, spec);
  check_partition(ds);
  CHECK(static_cast<std::int64_t>(ds.train_idx.size()) == std::llround(train * labelled_nodes));
  CHECK(static_cast<std::int64_t>(ds.val_idx.size()) == std::llround(val * labelled_nodes));
}

TEST_CASE("splits are reproducible from the seed", "[splits]") {
  const std::string text = GENERATE(as<std::string>{}, "per-class:20,15", "random:0.5,0.25");
  INFO(text);
  Dataset a = labelled(three_classes(), 3), b = labelled(three_classes(), 3), c = labelled(three_classes(), 3);
  assign_split(a, parse_split_spec(text, 1));
  assign_split(b, parse_split_spec(text, 1));
  assign_split(c, parse_split_spec(text, 2));
  CHECK(vec(a.train_idx) == vec(b.train_idx));
  CHECK(vec(a.val_idx) == vec(b.val_idx));
  CHECK(vec(a.test_idx) == vec(b.test_idx));
  CHECK(vec(a.train_idx) != vec(c.train_idx));
  CHECK(vec(a.val_idx) != vec(c.val_idx));
}

TEST_CASE("assign_split replaces an existing split", "[splits]") {
  Dataset ds = labelled(three_classes(), 3);
  ds.train_idx = Array<NodeId>(std::vector<NodeId>{0, 1, 2});
  ds.test_idx = Array<NodeId>(std::vector<NodeId>{3});  // node 3 is unlabelled
  assign_split(ds, parse_split_spec("random:0.5,0.5", 4));
  check_partition(ds);
  CHECK(ds.test_idx.empty());
}

TEST_CASE("assign_split refuses datasets it cannot split", "[splits]") {
  Dataset unlabelled = labelled({}, 0);
  CHECK_THROWS_AS(assign_split(unlabelled, parse_split_spec("random:0.6,0.2", 0)), InputError);

  Dataset out_of_range = labelled({0, 1, 5, -1}, 2);
  CHECK_THROWS_WITH(assign_split(out_of_range, parse_split_spec("random:0.6,0.2", 0)), Catch::Contains("node 2"));

  Dataset ds = labelled(three_classes(), 3);
  CHECK_THROWS_AS(assign_split(ds, SplitSpec{}), InputError);  // kind kNone
  SplitSpec bad_fractions;
  bad_fractions.kind = SplitSpec::Kind::kRandom;
  bad_fractions.train_fraction = 0.9;
  bad_fractions.val_fraction = 0.2;
  CHECK_THROWS_AS(assign_split(ds, bad_fractions), InputError);
  SplitSpec negative;
  negative.kind = SplitSpec::Kind::kPerClass;
  negative.train_per_class = -1;
  CHECK_THROWS_AS(assign_split(ds, negative), InputError);

  // All labels -1: nothing to split, but nothing wrong either.
  Dataset none_labelled = labelled({-1, -1, -1}, 2);
  assign_split(none_labelled, parse_split_spec("random:0.6,0.2", 0));
  CHECK(none_labelled.train_idx.empty());
  CHECK(none_labelled.val_idx.empty());
  CHECK(none_labelled.test_idx.empty());
}
