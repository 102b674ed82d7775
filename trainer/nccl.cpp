#include "trainer/nccl.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

#ifdef SHARDGNN_NCCL
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <nccl.h>
#endif

namespace shardgnn {

#ifdef SHARDGNN_NCCL

class NcclComm {
 public:
  ncclComm_t comm = nullptr;
};

namespace {

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string("NCCL ") + what + ": " + ncclGetErrorString(r));
}

}  // namespace

void NcclDeleter::operator()(NcclComm* c) const noexcept {
  // Abort, not destroy: ncclCommDestroy waits for the other ranks, and a rank unwinding from an
  // error of its own would wait for ranks that are waiting for it in MPI. Training has read its
  // results back from the device by the time a communicator goes, so nothing is in flight.
  if (c->comm != nullptr) ncclCommAbort(c->comm);
  delete c;
}

NcclHandle nccl_connect(const comm::Communicator& comm, const torch::Device& device, bool own_gpu) {
  const bool here = device.is_cuda() && comm.size() > 1 && own_gpu;
  if (comm.allreduce<std::int32_t>(here ? 1 : 0, comm::Op::kMin) == 0) return nullptr;
  // Rank 0's id, or its error, to every rank in one broadcast.
  struct {
    ncclUniqueId id;
    char error[256];
  } hello{};
  if (comm.rank() == 0) {
    const ncclResult_t r = ncclGetUniqueId(&hello.id);
    if (r != ncclSuccess) std::snprintf(hello.error, sizeof hello.error, "NCCL unique id: %s", ncclGetErrorString(r));
  }
  comm.broadcast(std::span<std::byte>(reinterpret_cast<std::byte*>(&hello), sizeof hello), 0);
  comm.check_all(hello.error[0] == '\0', hello.error);
  NcclHandle out(new NcclComm);
  comm::agree(comm, [&] {
    c10::cuda::CUDAGuard on(device.index());
    check(ncclCommInitRank(&out->comm, comm.size(), hello.id, comm.rank()), "communicator");
  });
  return out;
}

void nccl_sum(NcclComm& nccl, torch::Tensor& flat) {
  TORCH_CHECK(flat.is_cuda() && flat.is_contiguous() && flat.scalar_type() == torch::kFloat, "nccl_sum: a contiguous float32 CUDA tensor");
  check(ncclAllReduce(flat.data_ptr(), flat.data_ptr(), static_cast<std::size_t>(flat.numel()), ncclFloat, ncclSum, nccl.comm,
                      c10::cuda::getCurrentCUDAStream(flat.device().index()).stream()),
        "all-reduce");
}

#else

class NcclComm {};

void NcclDeleter::operator()(NcclComm* c) const noexcept { delete c; }

NcclHandle nccl_connect(const comm::Communicator& comm, const torch::Device&, bool) {
  // Every rank of a job runs the same build: nothing to agree on.
  static_cast<void>(comm);
  return nullptr;
}

void nccl_sum(NcclComm&, torch::Tensor&) { throw std::logic_error("nccl_sum: this build has no NCCL"); }

#endif

}  // namespace shardgnn
