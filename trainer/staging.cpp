#include "trainer/staging.hpp"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <cstring>

namespace shardgnn {

namespace {

std::int64_t int_count(const MiniBatch& mb) {
  std::size_t n = target_values(mb.targets).size() + mb.degrees.size();
  for (const Block& b : mb.blocks) n += b.indptr.size() + b.indices.size();
  return static_cast<std::int64_t>(n);
}

}  // namespace

PackedBatch pack_batch(const MiniBatch& mb, const torch::Device& device, bool pinned) {
  const auto host = torch::TensorOptions().pinned_memory(pinned);
  torch::Tensor ints = torch::empty({int_count(mb)}, host.dtype(torch::kLong));
  std::int64_t* out = ints.data_ptr<std::int64_t>();
  const auto put = [&](const std::vector<std::int64_t>& v) {
    if (!v.empty()) std::memcpy(out, v.data(), v.size() * sizeof(std::int64_t));
    out += v.size();
  };
  for (const Block& b : mb.blocks) {
    put(b.indptr);
    put(b.indices);
  }
  put(target_values(mb.targets));
  put(mb.degrees);
  const auto n = static_cast<std::int64_t>(mb.input_nodes().size());
  torch::Tensor x;
  if (n > 0 && mb.feature_dim > 0) {
    x = torch::empty({n, mb.feature_dim}, host.dtype(torch::kFloat));
    std::memcpy(x.data_ptr<float>(), mb.features.data(), static_cast<std::size_t>(x.numel()) * sizeof(float));
  } else {
    x = torch::zeros({n, mb.feature_dim}, torch::kFloat);
  }
  return {ints.to(device, /*non_blocking=*/pinned), x.to(device, /*non_blocking=*/pinned)};
}

BatchTensors unpack_batch(const PackedBatch& packed, const MiniBatch& mb) {
  BatchTensors t;
  std::int64_t at = 0;
  const auto take = [&](std::size_t n) {
    torch::Tensor s = packed.ints.slice(0, at, at + static_cast<std::int64_t>(n));
    at += static_cast<std::int64_t>(n);
    return s;
  };
  for (const Block& b : mb.blocks) {
    torch::Tensor indptr = take(b.indptr.size());
    t.blocks.push_back(block_tensors(b.num_src, b.num_dst, indptr, take(b.indices.size())));
  }
  t.y = take(target_values(mb.targets).size());
  if (!mb.degrees.empty()) {
    const torch::Tensor deg = take(mb.degrees.size()).to(torch::kFloat);
    for (BlockTensors& b : t.blocks) b.src_degree = deg.slice(0, 0, b.num_src);
  }
  t.x = packed.x;
  return t;
}

struct BatchStager::Staged {
  PackedBatch packed;
  c10::Event ready;
};

BatchStager::BatchStager(torch::Device device) : device_(device) {
  if (!device_.is_cpu()) side_ = c10::impl::VirtualGuardImpl(device_.type()).getStreamFromGlobalPool(device_);
}

void BatchStager::stage(MiniBatch& mb) const {
  // A typed batch's per-type rows are not packed: take() copies them on the training thread.
  if (!side_ || mb.typed()) return;
  // Also makes the batch's device current on this thread, which may be the prefetch thread.
  c10::StreamGuard on_side(*side_);
  auto staged = std::make_shared<Staged>(Staged{pack_batch(mb, device_, /*pinned=*/true), c10::Event(device_.type())});
  staged->ready.record(*side_);
  mb.staged = std::move(staged);
}

BatchTensors BatchStager::take(const MiniBatch& mb) const {
  if (!side_ || !mb.staged) return to_tensors(mb, device_);
  const auto& staged = *static_cast<const Staged*>(mb.staged.get());
  const c10::impl::VirtualGuardImpl impl(device_.type());
  const c10::Stream current = impl.getStream(device_);
  staged.ready.block(current);
  // Allocated on the side stream but used on this one: the caching allocator must not hand the
  // memory back to the side stream before this stream's work on it is done.
  for (const torch::Tensor& t : {staged.packed.ints, staged.packed.x})
    if (t.defined() && t.numel() > 0) impl.recordDataPtrOnStream(t.storage().data_ptr(), current);
  return unpack_batch(staged.packed, mb);
}

}  // namespace shardgnn
