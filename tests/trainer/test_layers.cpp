// The GNN layers on a tiny drawn block against hand-computed values, the classification metrics,
// and the configuration checks. No communication: these run on every rank alike.

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainer/torch_catch.hpp"  // torch, then Catch
#include "datasets/error.hpp"
#include "model/attention_sum.hpp"
#include "trainer/config.hpp"
#include "model/gemm.hpp"
#include "trainer/metrics.hpp"
#include "model/convs.hpp"
#include "model/gnn.hpp"

using namespace shardgnn;
using Approx = Catch::Detail::Approx;

namespace {

// The block (src ids; the dst nodes 0, 1, 2 are src 0, 1, 2 by the dst-prefix):
//
//     src 1 --.               src 0 --.
//              > dst 0        src 2 ---> dst 1        (nothing) -> dst 2
//     src 2 --'               src 3 --'
Block drawn_block() {
  Block b;
  b.num_src = 4;
  b.num_dst = 3;
  b.indptr = {0, 2, 5, 5};
  b.indices = {1, 2, 0, 2, 3};
  return b;
}


// num_dst dst nodes among num_src src nodes, each with in-edges from src (v * a + k * b) % num_src
// for k = 1..degree.
Block spread_block(std::int64_t num_src, std::int64_t num_dst, std::int64_t degree, std::int64_t a, std::int64_t b) {
  Block blk;
  blk.num_src = num_src;
  blk.num_dst = num_dst;
  blk.indptr.push_back(0);
  for (std::int64_t v = 0; v < num_dst; ++v) {
    for (std::int64_t k = 1; k <= degree; ++k) blk.indices.push_back((v * a + k * b) % num_src);
    blk.indptr.push_back(static_cast<std::int64_t>(blk.indices.size()));
  }
  return blk;
}

void set_weight(torch::Tensor w, const torch::Tensor& value) {
  torch::NoGradGuard g;
  w.copy_(value);
}

}  // namespace

TEST_CASE("block tensors alias the block and list each edge's dst", "[trainer][layers]") {
  const Block b = drawn_block();
  const BlockTensors t = to_tensors(b, torch::kCPU);
  CHECK(t.src.data_ptr<std::int64_t>() == b.indices.data());  // no copy on the CPU
  const std::vector<std::int64_t> dst(t.dst.data_ptr<std::int64_t>(), t.dst.data_ptr<std::int64_t>() + 5);
  CHECK(dst == std::vector<std::int64_t>({0, 0, 1, 1, 1}));
  CHECK(t.in_degree[2].item<float>() == 0);
}

TEST_CASE("SAGEConv: own row plus the mean of the in-neighbours", "[trainer][layers]") {
  const Block b = drawn_block();
  const BlockTensors t = to_tensors(b, torch::kCPU);
  const torch::Tensor h = rows({{1, 0}, {0, 1}, {2, 2}, {4, 0}});
  SECTION("aggregate, then project (in <= out)") {
    SAGEConv conv(SAGEConvOptions(2, 2));
    set_weight(conv->fc_self->weight, torch::eye(2));
    set_weight(conv->fc_self->bias, torch::zeros({2}));
    set_weight(conv->fc_neigh->weight, torch::eye(2));
    const torch::Tensor out = conv(t, h);
    // dst 0: [1,0] + mean([0,1],[2,2]);  dst 1: [0,1] + mean([1,0],[2,2],[4,0]);  dst 2: [2,2] + 0
    CHECK(torch::allclose(out, rows({{2, 1.5}, {7.0f / 3, 5.0f / 3}, {2, 2}})));
  }
  SECTION("project, then aggregate (in > out) gives the same") {
    SAGEConv conv(SAGEConvOptions(2, 1));
    set_weight(conv->fc_self->weight, rows({{1, 1}}));
    set_weight(conv->fc_self->bias, torch::zeros({1}));
    set_weight(conv->fc_neigh->weight, rows({{1, 1}}));
    const torch::Tensor out = conv(t, h);
    // row sums 1, 1, 4, 4: dst 0: 1 + (1+4)/2;  dst 1: 1 + (1+4+4)/3;  dst 2: 4 + 0
    CHECK(torch::allclose(out, rows({{3.5}, {4}, {4}})));
  }
}

TEST_CASE("GraphConv: symmetric normalisation with self-loops from the dst-prefix", "[trainer][layers]") {
  const Block b = drawn_block();
  BlockTensors t = to_tensors(b, torch::kCPU);
  const torch::Tensor h = rows({{1}, {2}, {3}, {4}});
  auto make = [&](bool self_loop) {
    GraphConv conv(GraphConvOptions(1, 1).self_loop(self_loop));
    set_weight(conv->fc->weight, rows({{1}}));
    return conv;
  };
  const double r2 = std::sqrt(2.0), r3 = std::sqrt(3.0);
  SECTION("with self-loops (A + I)") {
    // in-degrees with the loop: 3, 4, 1; out-degrees within the block: src 0: 1+1, src 1: 1+1,
    // src 2: 2+1, src 3: 1 (not a dst, so no loop).
    const torch::Tensor out = make(true)(t, h);
    CHECK(out[0].item<double>() == Approx((1 / r2 + 2 / r2 + 3 / r3) / r3));
    CHECK(out[1].item<double>() == Approx((2 / r2 + 1 / r2 + 3 / r3 + 4 / 1.0) / 2));
    CHECK(out[2].item<double>() == Approx(3 / r3 / 1.0));
  }
  SECTION("without self-loops, as DGL GraphConv(norm='both') on the block") {
    const torch::Tensor out = make(false)(t, h);
    CHECK(out[0].item<double>() == Approx((2 / 1.0 + 3 / r2) / r2));
    CHECK(out[1].item<double>() == Approx((1 / 1.0 + 3 / r2 + 4 / 1.0) / r3));
    CHECK(out[2].item<double>() == Approx(0));  // no in-edges
  }
  SECTION("full-graph degrees when the block carries them") {
    t.src_degree = torch::full({4}, 5.0f);  // + the self-loop: 6 each
    const torch::Tensor out = make(true)(t, h);
    const double r6 = std::sqrt(6.0);
    // dst 0 sampled 2 of its 5 in-edges and dst 1 3 of them: their sums scale by 5/2 and 5/3.
    CHECK(out[0].item<double>() == Approx((2.5 * (2 + 3) / r6 + 1 / r6) / r6));
    CHECK(out[1].item<double>() == Approx((5.0 / 3 * (1 + 3 + 4) / r6 + 2 / r6) / r6));
    CHECK(out[2].item<double>() == Approx(3 / r6 / r6));
  }
}

TEST_CASE("GraphConv on sampled blocks with full-graph degrees: over every draw of k neighbours, the mean is the full layer", "[trainer][layers]") {
  // dst 0 and 1 (src 0, 1) with in-neighbours src 2..5 and 3..5; degrees in the whole graph given.
  const std::vector<std::vector<std::int64_t>> nbrs{{2, 3, 4, 5}, {3, 4, 5}};
  const torch::Tensor degree = torch::tensor({4.0f, 3.0f, 2.0f, 6.0f, 1.0f, 3.0f});
  auto block = [&](const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
    Block blk;
    blk.num_src = 6;
    blk.num_dst = 2;
    blk.indptr = {0, static_cast<std::int64_t>(a.size()), static_cast<std::int64_t>(a.size() + b.size())};
    blk.indices = a;
    blk.indices.insert(blk.indices.end(), b.begin(), b.end());
    return blk;
  };
  // Every k-subset of a neighbour list, each once (uniform sampling without replacement).
  auto subsets = [](const std::vector<std::int64_t>& from, std::size_t k) {
    std::vector<std::vector<std::int64_t>> out;
    std::vector<bool> pick(from.size(), false);
    std::fill(pick.begin(), pick.begin() + static_cast<std::ptrdiff_t>(k), true);
    do {
      std::vector<std::int64_t> s;
      for (std::size_t i = 0; i < from.size(); ++i)
        if (pick[i]) s.push_back(from[i]);
      out.push_back(s);
    } while (std::prev_permutation(pick.begin(), pick.end()));
    return out;
  };
  torch::manual_seed(5);
  const torch::Tensor h = torch::randn({6, 3});
  // (3 -> 8) sums the inputs first, (3 -> 2) projects them first: both paths.
  for (const std::int64_t out_dim : {std::int64_t{8}, std::int64_t{2}}) {
    GraphConv conv(GraphConvOptions(3, out_dim));
    const Block full_block = block(nbrs[0], nbrs[1]);
    BlockTensors full = to_tensors(full_block, torch::kCPU);
    full.src_degree = degree;
    torch::NoGradGuard no_grad;
    const torch::Tensor want = conv(full, h);
    for (const std::size_t k : {std::size_t{1}, std::size_t{2}}) {
      const auto draws0 = subsets(nbrs[0], k), draws1 = subsets(nbrs[1], k);
      torch::Tensor sum = torch::zeros_like(want);
      for (const auto& d0 : draws0)
        for (const auto& d1 : draws1) {
          const Block sampled = block(d0, d1);
          BlockTensors t = to_tensors(sampled, torch::kCPU);
          t.src_degree = degree;
          sum += conv(t, h);
        }
      INFO("out " << out_dim << ", k " << k);
      CHECK(torch::allclose(sum / static_cast<double>(draws0.size() * draws1.size()), want, 1e-5, 1e-5));
    }
  }
}

TEST_CASE("GATConv: attention is a softmax over each dst's in-edges and the self-loop", "[trainer][layers]") {
  const Block b = drawn_block();
  const BlockTensors t = to_tensors(b, torch::kCPU);
  const torch::Tensor h = rows({{1, 0}, {0, 1}, {2, 2}, {4, 0}});
  GATConv conv(GATConvOptions(2, 2, 1));
  set_weight(conv->fc->weight, torch::eye(2));
  set_weight(conv->attn_l, rows({{1, 0}}).view({1, 1, 2}));
  set_weight(conv->attn_r, rows({{0, 1}}).view({1, 1, 2}));
  set_weight(conv->bias, torch::zeros({1, 2}));
  torch::Tensor a;
  const torch::Tensor out = conv(t, h, &a).squeeze(1);
  REQUIRE(a.size(0) == 5 + 3);
  // Serial reference: edges (u -> v) of the block, then v -> v.
  const std::vector<std::pair<int, int>> edges{{1, 0}, {2, 0}, {0, 1}, {2, 1}, {3, 1}, {0, 0}, {1, 1}, {2, 2}};
  const auto hv = [&](int i, int k) { return h[i][k].item<double>(); };
  const auto lrelu = [](double x) { return x > 0 ? x : 0.2 * x; };
  std::vector<double> denom(3, 0), expect_out(6, 0);
  for (auto [u, v] : edges) denom[v] += std::exp(lrelu(hv(u, 0) + hv(v, 1)));
  for (std::size_t e = 0; e < edges.size(); ++e) {
    const auto [u, v] = edges[e];
    const double w = std::exp(lrelu(hv(u, 0) + hv(v, 1))) / denom[v];
    CHECK(a[static_cast<std::int64_t>(e)][0].item<double>() == Approx(w));
    for (int k = 0; k < 2; ++k) expect_out[v * 2 + k] += w * hv(u, k);
  }
  for (int v = 0; v < 3; ++v)
    for (int k = 0; k < 2; ++k) CHECK(out[v][k].item<double>() == Approx(expect_out[v * 2 + k]));
  // Sums to 1 per dst, for random weights and several heads too; dst 2 attends only to itself.
  GATConv multi(GATConvOptions(2, 3, 4));
  torch::Tensor a4;
  multi(t, h * 10, &a4);
  const torch::Tensor sums = torch::zeros({3, 4}).index_add(0, torch::cat({t.dst, torch::arange(3)}), a4);
  CHECK(torch::allclose(sums, torch::ones({3, 4})));
  CHECK(torch::allclose(a4[7], torch::ones({4})));
}

TEST_CASE("models run forward and backward on blocks, empty ones included", "[trainer][layers]") {
  const Block b = drawn_block();
  Block top;  // dst 0, 1 of the drawn block's dst nodes
  top.num_src = 3;
  top.num_dst = 2;
  top.indptr = {0, 1, 3};
  top.indices = {2, 0, 2};
  Block empty;
  empty.indptr = {0};
  const std::vector<Block> two{b, top}, none{empty, empty};  // the tensors alias these
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    INFO(model_name(kind));
    Gnn model(GnnOptions(ModelConfig{.kind = kind, .hidden = 8, .heads = 2, .dropout = 0.5}, 5, 3, 2));
    const auto blocks = to_tensors(two, torch::kCPU);
    const torch::Tensor logits = model->forward(blocks, torch::randn({4, 5}));
    CHECK(logits.sizes() == torch::IntArrayRef({2, 3}));
    logits.sum().backward();
    for (const auto& p : model->parameters()) CHECK(p.grad().defined());
    CHECK(model->forward(to_tensors(none, torch::kCPU), torch::zeros({0, 5})).sizes() == torch::IntArrayRef({0, 3}));
  }
}

TEST_CASE("accuracy and macro-F1 from a confusion matrix", "[trainer][metrics]") {
  Confusion c(3);
  for (auto [t, p] : std::vector<std::pair<int, int>>{{0, 0}, {0, 0}, {0, 1}, {1, 1}, {2, 1}}) c.add(t, p);
  c.add(-1, 0);  // unlabelled: skipped
  const ClassMetrics m = c.metrics();
  CHECK(m.count == 5);
  CHECK(m.accuracy == Approx(0.6));
  // F1: class 0 = 2*2/(3+2), class 1 = 2*1/(1+3), class 2 = 0
  CHECK(m.macro_f1 == Approx((0.8 + 0.5 + 0.0) / 3));
  CHECK(Confusion(4).metrics().accuracy == 0);
}

TEST_CASE("bad training options are clear errors", "[trainer][bad-input]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(parse_model("gin"), Contains("unknown --model 'gin'"));
  CHECK_THROWS_WITH(parse_optimizer("adagrad"), Contains("expected one of: adam, sgd"));
  CHECK_THROWS_WITH(parse_lr_schedule("poly"), Contains("expected one of: none, step, cosine"));
  auto bad = [](auto change) {
    TrainConfig c;
    change(c);
    return c;
  };
  CHECK_NOTHROW(validate(TrainConfig{}));
  CHECK_THROWS_AS(validate(bad([](TrainConfig& c) { c.model.hidden = 0; })), InputError);
  CHECK_THROWS_WITH(validate(bad([](TrainConfig& c) { c.model.hidden = 0; })), Contains("--hidden must be at least 1"));
  CHECK_THROWS_WITH(validate(bad([](TrainConfig& c) { c.optim.lr = 0; })), Contains("--lr must be > 0"));
  CHECK_THROWS_WITH(validate(bad([](TrainConfig& c) { c.optim.lr = -1; })), Contains("--lr must be > 0"));
  CHECK_THROWS_WITH(validate(bad([](TrainConfig& c) { c.model.dropout = 1; })), Contains("--dropout"));
  CHECK_THROWS_WITH(validate(bad([](TrainConfig& c) {
                      c.model.kind = ModelKind::kGat;
                      c.model.hidden = 10;
                      c.model.heads = 4;
                    })),
                    Contains("not divisible by --heads"));
  CHECK_THROWS_WITH(validate(bad([](TrainConfig& c) { c.device.name = "tpu"; })), Contains("unknown --device 'tpu'"));
  CHECK_THROWS_WITH(validate(bad([](TrainConfig& c) { c.files.resume = true; })), Contains("--resume needs --checkpoint-dir"));
  TrainConfig step;
  step.optim.schedule = LrSchedule::kStep;
  step.epochs = 9;
  CHECK(lr_at(step, 2) == Approx(0.01));
  CHECK(lr_at(step, 3) == Approx(0.001));
  TrainConfig cosine;
  cosine.optim.schedule = LrSchedule::kCosine;
  CHECK(lr_at(cosine, 0) == Approx(0.01));
  CHECK(lr_at(cosine, 10) == Approx(0.005));
}

TEST_CASE("dropout keeps 1 - p of the inputs scaled by 1 / (1 - p), keyed and reseedable, none in eval mode", "[trainer][layers]") {
  Gnn model(GnnOptions(ModelConfig{.kind = ModelKind::kSage, .hidden = 8, .dropout = 0.3}, 64, 3, 2));
  const torch::Tensor x = torch::ones({1000, 64});
  model->train();
  model->reseed_dropout(7);
  const torch::Tensor a = model->dropout(x, 0.3);
  const double kept = a.ne(0).sum().item<double>() / 64000.0;
  CHECK(std::abs(kept - 0.7) < 0.01);  // sd of the fraction ~0.0018
  CHECK(a.masked_select(a.ne(0)).allclose(torch::full({1}, 1.0 / 0.7)));
  const torch::Tensor b = model->dropout(x, 0.3);
  CHECK(!a.equal(b));  // a new mask per call
  model->reseed_dropout(7);
  CHECK(model->dropout(x, 0.3).equal(a));  // the same stream after reseeding
  // An input without a gradient (the features) gets the mask applied in the same pass; one with a
  // gradient keeps the mask for backward. The same values either way, and the mask as gradient.
  const torch::Tensor y = torch::randn({100, 64});
  model->reseed_dropout(9);
  const torch::Tensor fused = model->dropout(y, 0.3);
  model->reseed_dropout(9);
  const torch::Tensor yg = y.clone().requires_grad_(true);
  const torch::Tensor masked = model->dropout(yg, 0.3);
  REQUIRE(masked.requires_grad());
  CHECK(torch::equal(fused, masked.detach()));
  masked.sum().backward();
  CHECK(torch::equal(yg.grad() * y, fused));
  model->eval();
  CHECK(model->dropout(x, 0.3).equal(x));
}

TEST_CASE("bf16 precision: the same model within bfloat16's rounding, float32 logits and gradients, products in bfloat16", "[trainer][layers]") {
  const std::vector<Block> blocks{spread_block(40, 20, 4, 7, 5)};  // 40 src nodes, the first 20 of them dst
  auto t = to_tensors(blocks, torch::kCPU);
  // GCN as training runs it: full-graph degrees, each dst's 4 sampled in-edges of 4 to 13.
  auto with_degrees = t;
  with_degrees[0].src_degree = torch::arange(40, torch::kFloat).remainder(10) + 4;
  for (const auto& [kind, degrees] : {std::pair{ModelKind::kSage, false}, {ModelKind::kGcn, false}, {ModelKind::kGcn, true}, {ModelKind::kGat, false}}) {
    INFO(model_name(kind) << (degrees ? " with full-graph degrees" : ""));
    const auto& blocks_t = degrees ? with_degrees : t;
    torch::manual_seed(3);
    // 1 layer, 64 -> 4: GCN and SAGE project before aggregating.
    Gnn fp32(GnnOptions(ModelConfig{.kind = kind, .hidden = 16, .heads = 2, .dropout = 0}, 64, 4, 1));
    Gnn bf16(GnnOptions(ModelConfig{.kind = kind, .hidden = 16, .heads = 2, .dropout = 0, .precision = Precision::kBFloat16}, 64, 4, 1));
    {
      torch::NoGradGuard g;
      auto src = fp32->parameters(), dst = bf16->parameters();
      for (std::size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
    }
    const torch::Tensor x = torch::randn({40, 64});
    const torch::Tensor ref = fp32->forward(blocks_t, x), out = bf16->forward(blocks_t, x);
    CHECK(out.scalar_type() == torch::kFloat);
    // bfloat16 keeps 8 significant bits: the tolerance is a few of its rounding steps.
    const double scale = ref.abs().max().item<double>();
    CHECK((out - ref).abs().max().item<double>() <= 0.02 * scale);
    CHECK(!torch::equal(out, ref));  // the products really ran in bfloat16
    out.pow(2).sum().backward();
    for (const auto& p : bf16->parameters()) {
      REQUIRE(p.grad().defined());
      CHECK(p.grad().scalar_type() == torch::kFloat);
    }
  }
  CHECK(parse_precision("bf16") == Precision::kBFloat16);
  CHECK(precision_name(Precision::kFloat32) == "fp32");
  CHECK_THROWS_AS(parse_precision("fp16"), InputError);
}

TEST_CASE("SAGE and GCN apply their linear map on the cheaper side of the sum, with the same result, so do their split forms", "[trainer][layers]") {
  // A sampled-looking block: 6 dst nodes with 3 in-edges each from 24 src nodes.
  Block wide;
  wide.num_src = 24;
  wide.num_dst = 6;
  wide.indptr.push_back(0);
  for (std::int64_t v = 0; v < 6; ++v) {
    for (std::int64_t k = 0; k < 3; ++k) wide.indices.push_back(6 + v * 3 + k);
    wide.indptr.push_back(static_cast<std::int64_t>(wide.indices.size()));
  }
  // A whole graph: src = dst, a ring.
  Block ring;
  ring.num_src = ring.num_dst = 24;
  ring.indptr.push_back(0);
  for (std::int64_t v = 0; v < 24; ++v) {
    ring.indices.push_back((v + 1) % 24);
    ring.indices.push_back((v + 23) % 24);
    ring.indptr.push_back(static_cast<std::int64_t>(ring.indices.size()));
  }
  const BlockTensors w = to_tensors(wide, torch::kCPU), r = to_tensors(ring, torch::kCPU);
  CHECK(project_first(r, 64, 32));   // a whole graph: map first when it narrows the rows
  CHECK(!project_first(r, 32, 64));
  CHECK(!project_first(w, 64, 32));  // few dst rows: sum the 18 wide rows first, map 6 rows, not 24
  CHECK(project_first(w, 64, 1));    // unless the map shrinks the rows to almost nothing
  for (const auto* bt : {&w, &r}) {
    for (const std::int64_t out : {std::int64_t{32}, std::int64_t{1}}) {
      INFO("dst " << bt->num_dst << ", out " << out << ", project first " << project_first(*bt, 64, out));
      const torch::Tensor h = torch::randn({bt->num_src, 64});
      // Dense references: A[v][u] = 1 per edge u -> v.
      torch::Tensor A = torch::zeros({bt->num_dst, bt->num_src});
      for (std::int64_t e = 0; e < bt->src.numel(); ++e) A[bt->dst[e].item<std::int64_t>()][bt->src[e].item<std::int64_t>()] += 1;
      SAGEConv sage(SAGEConvOptions(64, out));
      const torch::Tensor mean = A.matmul(h) / A.sum(1, true).clamp_min(1);
      const torch::Tensor sage_ref = sage->fc_self(h.slice(0, 0, bt->num_dst)) + mean.matmul(sage->fc_neigh->weight.t());
      CHECK(torch::allclose(sage(*bt, h), sage_ref, 1e-4, 1e-5));
      // The same layer as weight-free sums then maps, and as maps on all rows then sums.
      CHECK(torch::allclose(sage->apply(sage->aggregate(*bt, h)), sage_ref, 1e-4, 1e-5));
      CHECK(torch::allclose(sage(*bt, sage->project(h), /*projected=*/true), sage_ref, 1e-4, 1e-5));
      GraphConv gcn(GraphConvOptions(64, out));
      torch::Tensor Al = A.clone();
      Al.slice(1, 0, bt->num_dst).add_(torch::eye(bt->num_dst));  // self-loops from the dst-prefix
      const torch::Tensor norm = Al.sum(1, true).clamp_min(1).rsqrt() * Al * Al.sum(0, true).clamp_min(1).rsqrt();
      const torch::Tensor gcn_ref = norm.matmul(h).matmul(gcn->fc->weight.t()) + gcn->bias;
      CHECK(torch::allclose(gcn(*bt, h), gcn_ref, 1e-4, 1e-5));
      CHECK(torch::allclose(gcn->apply(gcn->aggregate(*bt, h)), gcn_ref, 1e-4, 1e-5));
      CHECK(torch::allclose(gcn(*bt, gcn->project(h), /*projected=*/true), gcn_ref, 1e-4, 1e-5));
      GATConv gat(GATConvOptions(64, out, 2));
      CHECK(torch::allclose(gat(*bt, gat->fc(h), nullptr, /*projected=*/true), gat(*bt, h), 1e-4, 1e-5));
    }
  }
}

TEST_CASE("a model in eval mode gives the same logits from its first layer's kept sums and from tables projected layer by layer", "[trainer][layers]") {
  const Block b0 = spread_block(30, 12, 3, 5, 7);  // 30 src nodes, the first 12 of them dst; then 12 -> 4
  Block b1;
  b1.num_src = 12;
  b1.num_dst = 4;
  b1.indptr = {0, 2, 4, 5, 5};
  b1.indices = {4, 5, 6, 0, 11};
  const std::vector<Block> blocks{b0, b1};
  const auto t = to_tensors(blocks, torch::kCPU);
  const torch::Tensor x = torch::randn({30, 20});
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    INFO(model_name(kind));
    torch::manual_seed(4);
    Gnn model(GnnOptions(ModelConfig{.kind = kind, .hidden = 8, .heads = 2}, 20, 3, 2));
    model->eval();
    torch::NoGradGuard g;
    const torch::Tensor ref = model->forward(t, x);
    if (kind != ModelKind::kGat) {
      CHECK(torch::allclose(model->forward_aggregated(t, model->aggregate_input(t[0], x)), ref, 1e-4, 1e-5));
    } else {
      CHECK_THROWS(model->aggregate_input(t[0], x));  // attention depends on the weights
    }
    torch::Tensor h = x;
    for (std::int64_t l = 0; l < 2; ++l) {
      const torch::Tensor p = model->project_layer(l, h);
      CHECK(p.size(1) == model->projected_width(l));
      h = model->forward_layer(l, t[static_cast<std::size_t>(l)], p, /*projected=*/true);
    }
    CHECK(torch::allclose(h, ref, 1e-4, 1e-5));
    model->train();  // with dropout the rows would need it before the map
    CHECK_THROWS(model->project_layer(0, x));
  }
}

TEST_CASE("linear maps through the CPU product path equal torch's, values and gradients", "[trainer][layers]") {
  namespace F = torch::nn::functional;
  torch::manual_seed(6);
  const torch::Tensor wide = torch::randn({37, 2 * 19});
  // 11 outputs: the weight gradient as g^T x; 16: as (x^T g)^T, whole 8-wide rows.
  for (const std::int64_t outs : {11, 16}) {
    for (const bool bias : {true, false}) {
      for (const bool x_grad : {true, false}) {
        // A column slice (rows strided, as GraphSAGE's kept sums give them) and a plain matrix.
        for (const bool slice : {true, false}) {
          INFO(outs << " outputs, bias " << bias << ", x needs grad " << x_grad << ", column slice " << slice);
          torch::Tensor x = slice ? wide.slice(1, 19, 38).detach() : torch::randn({37, 19});
          x.set_requires_grad(x_grad);
          const torch::Tensor w = torch::randn({outs, 19}, torch::requires_grad());
          const torch::Tensor b = bias ? torch::randn({outs}, torch::requires_grad()) : torch::Tensor();
          const torch::Tensor y = linear_map(x, w, b);
          // Which path ran shows in the autograd node (of the product: a bias is added after it):
          // oneDNN's exactly when it is available.
          if (!bias) CHECK((cpu_gemm_backend() == "torch") == (y.grad_fn()->name().find("DnnlLinear") == std::string::npos));
          const torch::Tensor up = torch::randn({37, outs});
          (y * up).sum().backward();
          const torch::Tensor x2 = x.detach().clone().set_requires_grad(x_grad), w2 = w.detach().clone().set_requires_grad(true);
          const torch::Tensor b2 = bias ? b.detach().clone().set_requires_grad(true) : torch::Tensor();
          const torch::Tensor y2 = F::linear(x2, w2, b2);
          (y2 * up).sum().backward();
          CHECK(torch::allclose(y, y2, 1e-4, 1e-5));
          CHECK(torch::allclose(w.grad(), w2.grad(), 1e-4, 1e-5));
          if (bias) CHECK(torch::allclose(b.grad(), b2.grad(), 1e-4, 1e-5));
          CHECK(x.grad().defined() == x_grad);
          if (x_grad) CHECK(torch::allclose(x.grad(), x2.grad(), 1e-4, 1e-5));
        }
      }
    }
  }
  // Empty products: no rows, and no inner dimension (a zero-width input gives the bias).
  CHECK(linear_map(torch::zeros({0, 4}), torch::randn({3, 4})).sizes() == torch::IntArrayRef({0, 3}));
  const torch::Tensor b = torch::randn({3});
  CHECK(torch::equal(linear_map(torch::zeros({2, 0}), torch::zeros({3, 0}), b), b.expand({2, 3})));
  CHECK(torch::equal(linear_map(torch::zeros({2, 0}), torch::zeros({3, 0})), torch::zeros({2, 3})));
}

namespace {
// A block with a dst of no in-edges and repeated sources (7 src, 4 dst, 9 edges), as the CSR
// kernels' tests take it; the Block's arrays are kept alive beside their tensors.
struct KernelBlock {
  Block blk;
  BlockTensors b;
  KernelBlock() {
    blk.num_dst = 4;
    blk.num_src = 7;
    blk.indptr = {0, 3, 3, 7, 9};
    blk.indices = {1, 4, 6, 0, 4, 4, 5, 2, 3};
    b = to_tensors(blk, torch::kCPU);
  }
};
}  // namespace

TEST_CASE("GAT's attention sum in one pass over the CSR equals the gathered messages' sum, values and gradients", "[trainer][layers]") {
  torch::manual_seed(9);
  // 3 heads of width 5.
  const KernelBlock kb;
  const BlockTensors& b = kb.b;
  for (const int threads : {1, 2}) {
    INFO(threads << " threads");
    torch::set_num_threads(threads);
    const torch::Tensor z = torch::randn({7, 3, 5}, torch::requires_grad()), a = torch::rand({9, 3}, torch::requires_grad());
    const torch::Tensor up = torch::randn({4, 3, 5});
    (attention_sum(b, z, a) * up).sum().backward();
    const torch::Tensor z2 = z.detach().clone().set_requires_grad(true), a2 = a.detach().clone().set_requires_grad(true);
    const torch::Tensor ref = torch::zeros({4, 3, 5}).index_add(0, b.dst, z2.index_select(0, b.src) * a2.unsqueeze(-1));
    (ref * up).sum().backward();
    CHECK(torch::allclose(attention_sum(b, z, a), ref, 1e-5, 1e-6));
    CHECK(torch::allclose(z.grad(), z2.grad(), 1e-5, 1e-6));
    CHECK(torch::allclose(a.grad(), a2.grad(), 1e-5, 1e-6));
    CHECK(torch::equal(attention_sum(b, z, a)[1], torch::zeros({3, 5})));  // no in-edges: zeros
  }
  torch::set_num_threads(1);
}

TEST_CASE("GAT's attention weights in one pass over the CSR, row gathers and row sums equal torch's ops, values and gradients", "[trainer][layers]") {
  torch::manual_seed(10);
  const KernelBlock kb;
  const BlockTensors& b = kb.b;
  for (const int threads : {1, 2}) {
    INFO(threads << " threads");
    torch::set_num_threads(threads);
    // attention_softmax against leaky_relu, then the edge softmax.
    const torch::Tensor el = torch::randn({7, 3}, torch::requires_grad()), er = torch::randn({4, 3}, torch::requires_grad());
    const torch::Tensor up = torch::randn({9, 3});
    const torch::Tensor a = attention_softmax(b, el, er, 0.2);
    (a * up).sum().backward();
    const torch::Tensor el2 = el.detach().clone().set_requires_grad(true), er2 = er.detach().clone().set_requires_grad(true);
    const torch::Tensor ref =
        edge_softmax(b, torch::nn::functional::leaky_relu(el2.index_select(0, b.src) + er2.index_select(0, b.dst), torch::nn::functional::LeakyReLUFuncOptions().negative_slope(0.2)), false);
    (ref * up).sum().backward();
    CHECK(torch::allclose(a, ref, 1e-5, 1e-6));
    CHECK(torch::allclose(el.grad(), el2.grad(), 1e-5, 1e-6));
    CHECK(torch::allclose(er.grad(), er2.grad(), 1e-5, 1e-6));
    // Each dst's weights per head sum to one (the dst without in-edges has none).
    CHECK(torch::allclose(torch::zeros({4, 3}).index_add(0, b.dst, a).index_select(0, torch::tensor({0, 2, 3})), torch::ones({3, 3})));
    // gather_rows and add_rows_ against index_select and index_add, with repeated rows.
    const torch::Tensor x = torch::randn({6, 2, 5}, torch::requires_grad()), idx = torch::tensor({4, 1, 4, 0, 5});
    const torch::Tensor src = torch::randn({5, 2, 5}, torch::requires_grad());
    const torch::Tensor up2 = torch::randn({5, 2, 5}), up3 = torch::randn({6, 2, 5});
    torch::Tensor sum = x * 2;
    add_rows_(sum, idx, src);
    ((gather_rows(x, idx) * up2).sum() + (sum * up3).sum()).backward();
    const torch::Tensor x2 = x.detach().clone().set_requires_grad(true), src2 = src.detach().clone().set_requires_grad(true);
    const torch::Tensor sum2 = (x2 * 2).index_add(0, idx, src2);
    ((x2.index_select(0, idx) * up2).sum() + (sum2 * up3).sum()).backward();
    CHECK(torch::allclose(sum, sum2, 1e-5, 1e-6));
    CHECK(torch::allclose(x.grad(), x2.grad(), 1e-5, 1e-6));
    CHECK(torch::allclose(src.grad(), src2.grad(), 1e-5, 1e-6));
  }
  torch::set_num_threads(1);
  // attention_sum reads z as a view of a wider product (rows further apart than its heads).
  const torch::Tensor wide = torch::randn({7, 3 * 5 + 3}, torch::requires_grad());
  const torch::Tensor z = wide.split_with_sizes({15, 3}, 1)[0].view({7, 3, 5});
  const torch::Tensor a = torch::rand({9, 3});
  const torch::Tensor up = torch::randn({4, 3, 5});
  (attention_sum(b, z, a) * up).sum().backward();
  const torch::Tensor wide2 = wide.detach().clone().set_requires_grad(true);
  const torch::Tensor z2 = wide2.slice(1, 0, 15).reshape({7, 3, 5});
  const torch::Tensor ref = torch::zeros({4, 3, 5}).index_add(0, b.dst, z2.index_select(0, b.src) * a.unsqueeze(-1));
  (ref * up).sum().backward();
  CHECK(torch::allclose(attention_sum(b, z, a), ref, 1e-5, 1e-6));
  CHECK(torch::allclose(wide.grad(), wide2.grad(), 1e-5, 1e-6));
}
