// The relational layers against hand-computed references, and R-GCN / R-GAT learning on the
// hetero generator's graph what features alone do not show.
#include <cmath>
#include <vector>

#include "trainer/torch_catch.hpp"  // torch, then Catch
#include "datasets/hetero.hpp"
#include "sampler/sampler.hpp"
#include "model/gnn.hpp"
#include "model/relational.hpp"

using namespace shardgnn;

namespace {

// Papers and authors: cites (paper -> paper), written_by (paper -> author), writes (author -> paper).
GraphSchema tiny_schema() {
  return GraphSchema({{"paper", 3, 2}, {"author", 2, 0}},
                     {{"paper", "cites", "paper"}, {"paper", "written_by", "author"}, {"author", "writes", "paper"}}, "test");
}

// dst 0 (a paper) <- src 2 (paper), 1 (author), 4 (paper); dst 1 (an author) <- src 0, 2 (papers).
struct TinyBlock {
  BlockTensors block = block_tensors(5, 2, torch::tensor({0, 3, 5}, torch::kInt64), torch::tensor({2, 1, 4, 0, 2}, torch::kInt64));
  torch::Tensor types = torch::tensor({0, 1, 0, 1, 0}, torch::kInt64);
};

std::vector<std::int64_t> ints(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kInt64).contiguous();
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

// Each dst's in-neighbours by relation, from the hand-made block.
const std::vector<std::vector<std::vector<std::int64_t>>> kNeighbours = {
    {{2, 4}, {1}, {}},  // dst 0: cites 2 and 4, written_by 1
    {{}, {}, {0, 2}},   // dst 1: writes 0 and 2
};

}  // namespace

TEST_CASE("a block splits by relation: each edge goes with the relation from its dst's type to its src's", "[relational]") {
  TinyBlock t;
  const RelationBlocks rb = split_by_relation(t.block, t.types, tiny_schema());
  REQUIRE(rb.relations.size() == 3);
  CHECK(ints(rb.relations[0].src) == std::vector<std::int64_t>{2, 4});
  CHECK(ints(rb.relations[0].indptr) == std::vector<std::int64_t>{0, 2, 2});
  CHECK(ints(rb.relations[1].src) == std::vector<std::int64_t>{1});
  CHECK(ints(rb.relations[2].src) == std::vector<std::int64_t>{0, 2});
  CHECK(ints(rb.relations[2].dst) == std::vector<std::int64_t>{1, 1});
}

TEST_CASE("a block with relation ids splits by each edge's stored relation, two relations joining one pair of types", "[relational][relation-ids]") {
  // cites and mentions both join papers: the end types cannot tell them apart, the ids do.
  const GraphSchema schema({{"paper", 3, 2}, {"author", 2, 0}},
                           {{"paper", "cites", "paper"}, {"paper", "mentions", "paper"}, {"paper", "written_by", "author"}, {"author", "writes", "paper"}},
                           "test", /*relation_ids=*/true);
  TinyBlock t;
  // dst 0 <- src 2 (cites), 1 (written_by), 4 (mentions); dst 1 <- src 0, 2 (writes).
  t.block.relation = torch::tensor({0, 2, 1, 3, 3}, torch::kInt64);
  for (const bool ops : {false, true}) {
    INFO((ops ? "torch ops" : "CPU loops"));
    const RelationBlocks rb = ops ? split_by_relation_ops(t.block, t.types, schema) : split_by_relation(t.block, t.types, schema);
    REQUIRE(rb.relations.size() == 4);
    CHECK(ints(rb.relations[0].src) == std::vector<std::int64_t>{2});
    CHECK(ints(rb.relations[1].src) == std::vector<std::int64_t>{4});
    CHECK(ints(rb.relations[1].indptr) == std::vector<std::int64_t>{0, 1, 1});
    CHECK(ints(rb.relations[2].src) == std::vector<std::int64_t>{1});
    CHECK(ints(rb.relations[3].src) == std::vector<std::int64_t>{0, 2});
    CHECK(ints(rb.compact[1].src) == std::vector<std::int64_t>{0});
    CHECK(ints(rb.src_rows[1]) == std::vector<std::int64_t>{4});
  }
}

TEST_CASE("the CPU split by relation gives the torch ops' sub-blocks, edge for edge", "[relational]") {
  // Random blocks over the tiny schema, with edges of no relation (author -> author) and
  // relations some blocks lack.
  torch::manual_seed(11);
  for (const std::int64_t edges : {0, 1, 40, 900}) {
    const std::int64_t num_dst = 30, num_src = 120;
    const torch::Tensor dst = std::get<0>(torch::randint(num_dst, {edges}, torch::kInt64).sort());
    const torch::Tensor counts = torch::bincount(dst, {}, num_dst);
    const torch::Tensor indptr = torch::cat({torch::zeros({1}, torch::kInt64), counts.cumsum(0)});
    const BlockTensors b = block_tensors(num_src, num_dst, indptr, torch::randint(num_src, {edges}, torch::kInt64));
    const torch::Tensor types = torch::randint(2, {num_src}, torch::kInt64);
    const RelationBlocks got = split_by_relation(b, types, tiny_schema()), want = split_by_relation_ops(b, types, tiny_schema());
    REQUIRE(got.relations.size() == want.relations.size());
    REQUIRE(got.compact.size() == want.compact.size());
    for (std::size_t r = 0; r < want.relations.size(); ++r) {
      INFO(edges << " edges, relation " << r);
      for (const auto& [g, w] : {std::pair{got.relations[r], want.relations[r]}, std::pair{got.compact[r], want.compact[r]}}) {
        CHECK(g.num_src == w.num_src);
        CHECK(g.num_dst == w.num_dst);
        CHECK(ints(g.indptr) == ints(w.indptr));
        CHECK(ints(g.src) == ints(w.src));
        CHECK(ints(g.dst) == ints(w.dst));
        CHECK(torch::equal(g.in_degree, w.in_degree));
      }
      CHECK(ints(got.src_rows[r]) == ints(want.src_rows[r]));
      CHECK(ints(got.dst_rows[r]) == ints(want.dst_rows[r]));
    }
  }
}

TEST_CASE("R-GCN is W_0 h_v + b + the sum over relations of W_r times the mean of v's neighbours by r, with or without bases", "[relational]") {
  torch::manual_seed(3);
  TinyBlock t;
  const RelationBlocks rb = split_by_relation(t.block, t.types, tiny_schema());
  const torch::Tensor h = torch::randn({5, 4});
  for (const std::int64_t bases : {0, 2}) {
    RelGraphConv conv(RelGraphConvOptions(4, 3, 3).bases(bases));
    torch::NoGradGuard no_grad;
    conv->bias.uniform_();
    const torch::Tensor got = conv->forward(rb, h);
    const torch::Tensor W = conv->relation_weights();
    if (bases > 0) CHECK(torch::allclose(W[1], conv->coefficients[1][0] * conv->basis[0] + conv->coefficients[1][1] * conv->basis[1]));
    for (std::int64_t v = 0; v < 2; ++v) {
      torch::Tensor want = torch::matmul(h[v], conv->loop_weight) + conv->bias;
      for (std::size_t r = 0; r < 3; ++r) {
        const auto& nb = kNeighbours[static_cast<std::size_t>(v)][r];
        if (nb.empty()) continue;
        torch::Tensor mean = torch::zeros({4});
        for (const std::int64_t u : nb) mean += h[u];
        want += torch::matmul(mean / static_cast<double>(nb.size()), W[static_cast<std::int64_t>(r)]);
      }
      INFO("bases " << bases << ", dst " << v);
      CHECK(torch::allclose(got[v], want, 1e-5, 1e-6));
    }
  }
}

TEST_CASE("R-GAT sums per relation the attention over v's in-edges of that relation, plus its self term", "[relational]") {
  torch::manual_seed(4);
  TinyBlock t;
  const RelationBlocks rb = split_by_relation(t.block, t.types, tiny_schema());
  const torch::Tensor h = torch::randn({5, 4});
  RelGATConv conv(RelGATConvOptions(4, 3, 2, 3));
  torch::NoGradGuard no_grad;
  conv->bias.uniform_();
  const torch::Tensor got = conv->forward(rb, h);  // [2, heads 2, 3]
  for (std::int64_t v = 0; v < 2; ++v) {
    torch::Tensor want = conv->self_fc(h[v]).view({2, 3}) + conv->bias;
    for (std::size_t r = 0; r < 3; ++r) {
      const auto& nb = kNeighbours[static_cast<std::size_t>(v)][r];
      if (nb.empty()) continue;
      GATConv g = conv->per_relation[r];
      const torch::Tensor zv = g->fc(h[v]).view({2, 3});
      std::vector<torch::Tensor> scores, z;
      for (const std::int64_t u : nb) {
        z.push_back(g->fc(h[u]).view({2, 3}));
        scores.push_back(torch::leaky_relu((z.back() * g->attn_l[0]).sum(-1) + (zv * g->attn_r[0]).sum(-1), 0.2));
      }
      const torch::Tensor a = torch::softmax(torch::stack(scores), 0);  // [edges, heads]
      for (std::size_t i = 0; i < nb.size(); ++i) want += a[static_cast<std::int64_t>(i)].unsqueeze(-1) * z[i];
    }
    INFO("dst " << v);
    CHECK(torch::allclose(got[v], want, 1e-5, 1e-6));
  }
}

TEST_CASE("R-GAT's one-node CPU layer gives the per-relation composition's values and gradients", "[relational]") {
  // The reference: the self term, then each relation's GATConv over its compact block, added into
  // its dst rows (the general path, which other devices take).
  torch::manual_seed(12);
  const GraphSchema schema = tiny_schema();
  const int before = at::get_num_threads();
  for (const int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (const std::int64_t edges : {7, 600}) {
      const std::int64_t num_dst = 40, num_src = 150;
      const torch::Tensor dst = std::get<0>(torch::randint(num_dst, {edges}, torch::kInt64).sort());
      const torch::Tensor indptr = torch::cat({torch::zeros({1}, torch::kInt64), torch::bincount(dst, {}, num_dst).cumsum(0)});
      const BlockTensors block = block_tensors(num_src, num_dst, indptr, torch::randint(num_src, {edges}, torch::kInt64));
      const RelationBlocks rb = split_by_relation(block, torch::randint(2, {num_src}, torch::kInt64), schema);
      RelGATConv conv(RelGATConvOptions(16, 4, 3, 3));
      {
        torch::NoGradGuard no_grad;
        conv->bias.uniform_();
      }
      const torch::Tensor h = torch::randn({num_src, 16}, torch::requires_grad());
      const torch::Tensor got = conv->forward(rb, h);
      torch::Tensor want = conv->self_fc(h.slice(0, 0, num_dst)).view({num_dst, 3, 4}) + conv->bias;
      for (std::size_t r = 0; r < 3; ++r) {
        if (rb.compact[r].src.size(0) == 0) continue;
        GATConv g = conv->per_relation[r];
        const torch::Tensor er = torch::matmul(h.index_select(0, rb.dst_rows[r]), g->attn_dst_weight().t());
        want = want.index_add(0, rb.dst_rows[r], g->forward_bipartite(rb.compact[r], h.index_select(0, rb.src_rows[r]), er));
      }
      INFO(threads << " threads, " << edges << " edges");
      REQUIRE(got.sizes() == want.sizes());
      CHECK(torch::allclose(got, want, 1e-5, 1e-5));
      const torch::Tensor weight = torch::randn_like(want);
      std::vector<torch::Tensor> inputs = {h};
      for (const auto& p : conv->parameters()) inputs.push_back(p);
      const auto dgot = torch::autograd::grad({(got * weight).sum()}, inputs, {}, /*retain_graph=*/false, false, /*allow_unused=*/true);
      const auto dwant = torch::autograd::grad({(want * weight).sum()}, inputs, {}, false, false, true);
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        INFO("input " << i);
        REQUIRE(dgot[i].defined() == dwant[i].defined());
        if (dwant[i].defined()) CHECK(torch::allclose(dgot[i], dwant[i], 1e-4, 1e-5));
      }
    }
  }
  at::set_num_threads(before);
}

namespace {

// Trains `kind` on the generator's graph with reference batches (one process, the dataset's own
// features) and returns the validation accuracy after `epochs`.
double train_on_hetero(const Dataset& ds, ModelKind kind, std::vector<int> fanouts, int epochs) {
  torch::manual_seed(1);
  const GraphSchema& s = ds.schema;
  Gnn model(GnnOptions(ModelConfig{.kind = kind, .hidden = 32, .heads = 2, .dropout = 0.1}, 0, ds.num_classes, static_cast<std::int64_t>(fanouts.size())).schema(s));
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.01));
  SamplerConfig cfg;
  cfg.fanouts = std::move(fanouts);
  cfg.seed = 2;
  const std::vector<NodeId> train(ds.train_idx.begin(), ds.train_idx.end()), val(ds.val_idx.begin(), ds.val_idx.end());
  auto forward = [&](const std::vector<NodeId>& seeds, std::int64_t epoch, std::int64_t step) {
    // Kept alive (moved out with the output) while backward may read the blocks' index tensors.
    auto mb = std::make_shared<MiniBatch>(reference_sample(ds, cfg, seeds, epoch, step));
    BatchTensors t;
    const auto& in = mb->input_nodes();
    std::vector<std::vector<std::int64_t>> at(static_cast<std::size_t>(s.num_types()));
    std::vector<std::int64_t> types;
    for (std::size_t i = 0; i < in.size(); ++i) {
      types.push_back(s.type_of(in[i]));
      at[static_cast<std::size_t>(types.back())].push_back(static_cast<std::int64_t>(i));
    }
    std::vector<torch::Tensor> x, pos;
    for (int t = 0; t < s.num_types(); ++t) {
      const auto& p = at[static_cast<std::size_t>(t)];
      const std::int64_t F = s.types()[static_cast<std::size_t>(t)].feature_dim;
      torch::Tensor rows = torch::empty({static_cast<std::int64_t>(p.size()), F});
      for (std::size_t i = 0; i < p.size(); ++i)
        std::copy_n(ds.type_features[static_cast<std::size_t>(t)].data() + (in[static_cast<std::size_t>(p[i])] - s.begin(t)) * F, F,
                    rows.data_ptr<float>() + static_cast<std::int64_t>(i) * F);
      x.push_back(rows);
      pos.push_back(torch::tensor(p, torch::kInt64));
    }
    t.node_type = torch::tensor(types, torch::kInt64);
    t.blocks = to_tensors(mb->blocks, torch::kCPU);
    t.xs = x;
    t.at = pos;
    torch::Tensor labels = torch::empty({static_cast<std::int64_t>(seeds.size())}, torch::kInt64);
    for (std::size_t i = 0; i < seeds.size(); ++i) labels[static_cast<std::int64_t>(i)] = ds.labels[static_cast<std::size_t>(seeds[i])];
    return std::tuple{model->forward(t), labels, mb};
  };
  for (int epoch = 0; epoch < epochs; ++epoch) {
    model->train();
    const auto batches = epoch_batches(train, 128, 2, epoch, 0);
    for (std::size_t step = 0; step < batches.size(); ++step) {
      const auto [out, y, kept] = forward(batches[step], epoch, static_cast<std::int64_t>(step));
      opt.zero_grad();
      torch::nn::functional::cross_entropy(out, y).backward();
      opt.step();
    }
  }
  model->eval();
  torch::NoGradGuard no_grad;
  const auto [out, y, kept] = forward(val, 1000, 0);
  return out.argmax(1).eq(y).to(torch::kFloat).mean().item<double>();
}

}  // namespace

TEST_CASE("R-GCN and R-GAT read the generator's labels from the neighbourhood that features alone do not show", "[relational]") {
  HeteroOptions o;
  o.papers = 2000;
  o.feature_dim = 16;
  o.separation = 0.3;  // at 16 features, about as weak alone as the default's 128 at 0.12
  const Dataset ds = generate_hetero(o);
  const double alone = train_on_hetero(ds, ModelKind::kRgcn, {0, 0}, 8);
  const double rgcn = train_on_hetero(ds, ModelKind::kRgcn, {10, 5}, 8);
  const double rgat = train_on_hetero(ds, ModelKind::kRgat, {10, 5}, 8);
  INFO("val accuracy: features alone " << alone << ", R-GCN " << rgcn << ", R-GAT " << rgat);
  CHECK(rgcn > alone + 0.15);
  CHECK(rgat > alone + 0.15);
}
