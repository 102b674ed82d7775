#include "trainer/device.hpp"

#include <torch/cuda.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <cstdlib>

#include "datasets/error.hpp"

// OpenBLAS (Debian's BLAS behind libtorch) keeps its own thread pool, sized from the environment
// at load time and untouched by torch::set_num_threads; its spinning threads starve the other
// ranks' MPI progress on a shared node. Weak: null with another BLAS.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace shardgnn {

namespace {

void limit_threads(int n) {
  torch::set_num_threads(n);
  if (openblas_set_num_threads) openblas_set_num_threads(n);
}

}  // namespace

torch::Device resolve_device(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::kCPU;
  if (!torch::cuda::is_available())
    throw InputError("--device " + name + ": no CUDA device available (this libtorch was built without CUDA, or no GPU is visible); use --device cpu");
  const auto count = static_cast<int>(torch::cuda::device_count());
  torch::Device d = name == "cuda" ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % count)) : torch::Device(name);
  if (d.index() >= count) throw InputError("--device " + name + ": only " + std::to_string(count) + " CUDA devices are visible");
  // Work issued without a device of its own (streams, library handles, a bare tensor on
  // "cuda") goes to the current device, which is otherwise GPU 0 on every rank of the node.
  c10::impl::getDeviceGuardImpl(d.type())->setDevice(d);
  return d;
}

std::string set_rank_threads(int threads, const comm::Communicator::CoreShare& cores) {
  if (threads > 0) {
    limit_threads(threads);
    return "--threads";
  }
  if (const char* omp = std::getenv("OMP_NUM_THREADS"); omp != nullptr && *omp != '\0') return "OMP_NUM_THREADS";
  limit_threads(std::min(cores.cores, torch::get_num_threads()));
  return std::to_string(cores.cpus) + " CPU" + (cores.cpus == 1 ? "" : "s") + " in the binding, shared by " + std::to_string(cores.sharing) +
         " of the node's " + std::to_string(cores.ranks_on_node) + " rank" + (cores.ranks_on_node == 1 ? "" : "s") +
         (cores.per_task > 0 ? ", SLURM_CPUS_PER_TASK " + std::to_string(cores.per_task) : "");
}

std::string threads_text(const std::string& decided_by) {
  const int n = torch::get_num_threads();
  return std::to_string(n) + " torch thread" + (n == 1 ? "" : "s") + " per rank (" + decided_by + ")";
}

}  // namespace shardgnn
