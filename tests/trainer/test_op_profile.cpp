// The op profile: which op is charged with which work, and its limit from the measured rates.

#include "trainer/torch_catch.hpp"  // torch, then Catch
#include "trainer/op_profile.hpp"

#include <chrono>

using namespace shardgnn;

namespace {

const OpCost* find(const OpProfile& p, const std::string& name) {
  for (const OpCost& o : p.ops)
    if (o.name == name) return &o;
  return nullptr;
}

}  // namespace

TEST_CASE("the op profile charges each op's FLOPs or bytes once, to the op that does the work", "[profile]") {
  namespace F = torch::nn::functional;
  torch::NoGradGuard no_grad;
  const torch::Tensor a = torch::rand({256, 128}), b = torch::rand({128, 64}), bias = torch::rand({64});
  const torch::Tensor table = torch::rand({1000, 32});
  const torch::Tensor idx = torch::randint(1000, {500}, torch::kLong), offsets = torch::tensor({std::int64_t{0}, std::int64_t{250}, std::int64_t{500}});
  OpRecorder rec;
  const auto t0 = std::chrono::steady_clock::now();
  rec.start();
  torch::Tensor c = torch::mm(a, b);
  c = torch::addmm(bias, a, b);
  const torch::Tensor bag = F::embedding_bag(idx, table, F::EmbeddingBagFuncOptions().offsets(offsets).mode(torch::kSum).include_last_offset(true));
  const torch::Tensor rows = table.index_select(0, idx);
  rec.stop();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  torch::mm(a, b);  // not recorded
  const OpProfile p = rec.profile(2);
  CHECK(p.steps == 2);
  CHECK(p.gemm_flops_per_s > 0);
  CHECK(p.stream_bytes_per_s > 0);

  const OpCost* mm = find(p, "aten::mm");
  REQUIRE(mm != nullptr);
  CHECK(mm->calls == 1);
  CHECK(mm->bound == OpBound::kGemm);
  CHECK(mm->flops == 2.0 * 256 * 128 * 64);
  CHECK(mm->limit_s == Catch::Detail::Approx(mm->flops / p.gemm_flops_per_s));
  const OpCost* addmm = find(p, "aten::addmm");
  REQUIRE(addmm != nullptr);
  CHECK(addmm->flops == 2.0 * 256 * 128 * 64);

  // The wrapper embedding_bag calls the op that gathers; only the latter is charged.
  const OpCost* outer = find(p, "aten::embedding_bag");
  REQUIRE(outer != nullptr);
  CHECK(outer->bytes == 0);
  CHECK(outer->limit_s == 0);
  const OpCost* inner = find(p, "aten::_embedding_bag_forward_only");
  if (inner == nullptr) inner = find(p, "aten::_embedding_bag");
  REQUIRE(inner != nullptr);
  CHECK(inner->bound == OpBound::kGather);
  CHECK(inner->bytes == 500.0 * 32 * 4);
  CHECK(inner->limit_s > 0);
  const OpCost* gather = find(p, "aten::index_select");
  REQUIRE(gather != nullptr);
  CHECK(gather->bytes == 500.0 * 32 * 4);

  // Exclusive times never count a nested op twice: together they fit in the recorded stretch.
  for (const OpCost& o : p.ops) CHECK(o.seconds >= 0);
  CHECK(p.seconds() > 0);
  CHECK(p.seconds() <= wall);
  CHECK(p.limit_s() >= mm->limit_s + addmm->limit_s + inner->limit_s + gather->limit_s);
  const std::string table_text = format_op_profile(p);
  CHECK(table_text.find("aten::mm") != std::string::npos);
  CHECK(table_text.find("all ops") != std::string::npos);
}
