// Batches staged for a device ahead of their step. On a GPU the prefetch side packs a batch's index
// arrays and its features into pinned host memory and queues their copies on a stream of its own,
// so batch i+1 crosses the bus while batch i computes; the training thread then waits on the
// device, never on the host, for the copies to land. On the CPU the tensors alias the batch's
// arrays as they are, with nothing to copy.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>

#include "sampler/minibatch.hpp"
#include "model/gnn.hpp"

namespace shardgnn {

// A batch's int64 arrays (every block's indptr and indices, the targets, the degrees) in one tensor,
// and its features in another, on `device`: two copies a batch. `pinned`: the host side is staged
// in page-locked memory and copied without blocking on the current stream.
struct PackedBatch {
  torch::Tensor ints, x;
};
PackedBatch pack_batch(const MiniBatch& mb, const torch::Device& device, bool pinned);
// The batch's tensors, views of a PackedBatch of the same batch (what to_tensors gives from its
// arrays), on the packed tensors' device and the current stream.
BatchTensors unpack_batch(const PackedBatch& packed, const MiniBatch& mb);

class BatchStager {
 public:
  explicit BatchStager(torch::Device device);

  // Producer side (any thread): attaches the batch's packed tensors, copied on the side stream, to
  // mb.staged. Nothing to do on the CPU, nor for a typed batch (converted by take()).
  void stage(MiniBatch& mb) const;
  // Consumer side: the batch's tensors for the current stream, which waits (on the device) for the
  // staged copies; a batch that was not staged is converted here.
  BatchTensors take(const MiniBatch& mb) const;

  bool copies() const noexcept { return side_.has_value(); }

 private:
  struct Staged;
  torch::Device device_;
  std::optional<c10::Stream> side_;  // a GPU: the stream the copies are queued on
};

}  // namespace shardgnn
