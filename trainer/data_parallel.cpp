#include "trainer/data_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace shardgnn {

std::vector<torch::Tensor> state_tensors(const torch::nn::Module& model) {
  std::vector<torch::Tensor> out = model.parameters();
  for (const auto& b : model.buffers()) out.push_back(b);
  return out;
}

void broadcast_parameters(torch::nn::Module& model, const comm::Communicator& comm) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& t : state_tensors(model)) {
    torch::Tensor cpu = t.detach().to(torch::kCPU).contiguous().clone();
    comm.broadcast(std::span<std::byte>(static_cast<std::byte*>(cpu.data_ptr()), static_cast<std::size_t>(cpu.nbytes())), 0);
    t.copy_(cpu);
  }
}

std::uint64_t parameters_checksum(const torch::nn::Module& model) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (const torch::Tensor& t : state_tensors(model)) {
    const torch::Tensor cpu = t.detach().to(torch::kCPU).contiguous();
    const auto* p = static_cast<const unsigned char*>(cpu.data_ptr());
    for (std::size_t i = 0; i < static_cast<std::size_t>(cpu.nbytes()); ++i) h = (h ^ p[i]) * 1099511628211ULL;
  }
  return h;
}

GradientAllreducer::GradientAllreducer(const torch::nn::Module& model, const comm::Communicator& comm, NcclComm* nccl, std::size_t bucket_bytes)
    : params_(model.parameters()), comm_(comm), nccl_(nccl) {
  for (const auto& b : model.buffers())
    if (b.is_floating_point()) stats_.push_back(b);
  const std::size_t cap = std::max<std::size_t>(1, bucket_bytes / sizeof(float));
  std::size_t fill = 0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const auto n = static_cast<std::size_t>(params_[i].numel());
    if (buckets_.empty() || (fill > 0 && fill + n > cap)) {  // a parameter above the cap gets a bucket of its own
      buckets_.emplace_back();
      fill = 0;
    }
    buckets_.back().push_back(i);
    fill += n;
  }
  if (buckets_.empty()) buckets_.emplace_back();  // the counts still travel
}

namespace {

// Copies a bucket's flattened gradients (a 1-D float tensor, parameters in bucket order) back.
void unflatten(const std::vector<torch::Tensor>& params, const std::vector<std::size_t>& bucket, const torch::Tensor& flat) {
  std::int64_t off = 0;
  for (std::size_t i : bucket) {
    torch::Tensor p = params[i];
    p.mutable_grad().copy_(flat.slice(0, off, off + p.numel()).view(p.sizes()));
    off += p.numel();
  }
}

}  // namespace

double GradientAllreducer::sum_on_devices(double examples, std::vector<double>& extras) {
  std::vector<double> counts{examples};
  counts.insert(counts.end(), extras.begin(), extras.end());
  comm_.allreduce_inplace(std::span<double>(counts), comm::Op::kSum);
  std::copy(counts.begin() + 1, counts.end(), extras.begin());
  for (const auto& bucket : buckets_) {
    if (bucket.empty()) continue;
    std::vector<torch::Tensor> grads;
    for (std::size_t i : bucket) grads.push_back(params_[i].grad().reshape({-1}));
    torch::Tensor flat = torch::cat(grads);
    nccl_sum(*nccl_, flat);
    unflatten(params_, bucket, flat);
  }
  return counts[0];
}

double GradientAllreducer::sum_through_host(double examples, std::vector<double>& extras) {
  double total = examples;
  for (std::size_t bi = 0; bi < buckets_.size(); ++bi) {
    const bool last = bi + 1 == buckets_.size();
    std::size_t elems = 0;
    for (std::size_t i : buckets_[bi]) elems += static_cast<std::size_t>(params_[i].numel());
    buffer_.resize(elems + (last ? 1 + extras.size() : 0));
    std::size_t off = 0;
    for (std::size_t i : buckets_[bi]) {
      const torch::Tensor& p = params_[i];
      torch::from_blob(buffer_.data() + off, {p.numel()}, torch::kFloat).copy_(p.grad().reshape({-1}));
      off += static_cast<std::size_t>(p.numel());
    }
    if (last) {
      buffer_[off] = static_cast<float>(examples);
      for (std::size_t k = 0; k < extras.size(); ++k) buffer_[off + 1 + k] = static_cast<float>(extras[k]);
    }
    comm_.allreduce_inplace(std::span<float>(buffer_), comm::Op::kSum);
    unflatten(params_, buckets_[bi], torch::from_blob(buffer_.data(), {static_cast<std::int64_t>(elems)}, torch::kFloat));
    if (last) {
      total = buffer_[elems];
      for (std::size_t k = 0; k < extras.size(); ++k) extras[k] = buffer_[elems + 1 + k];
    }
  }
  return total;
}

double GradientAllreducer::average(double examples, std::vector<double>& extras) {
  const auto t0 = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  // Undefined gradients count as 0.
  for (torch::Tensor& p : params_)
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
  // One rank has nothing to sum: its gradients stay where they are (on a GPU, no trip through the host).
  double total = examples;
  if (comm_.size() > 1) {
    // The running statistics ride with the counts: summed with them, then averaged here.
    const std::size_t n_extras = extras.size();
    for (const torch::Tensor& b : stats_) {
      const torch::Tensor v = b.detach().to(torch::kCPU, torch::kDouble).contiguous();
      extras.insert(extras.end(), v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
    }
    total = nccl_ != nullptr ? sum_on_devices(examples, extras) : sum_through_host(examples, extras);
    std::size_t at = n_extras;
    for (const torch::Tensor& b : stats_) {
      const torch::Tensor mean = torch::from_blob(extras.data() + at, {b.numel()}, torch::kDouble) / comm_.size();
      b.copy_(mean.view(b.sizes()).to(b.device(), b.scalar_type()));
      at += static_cast<std::size_t>(b.numel());
    }
    extras.resize(n_extras);
  }
  if (total > 0)
    for (torch::Tensor& p : params_) p.mutable_grad().div_(total);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return total;
}

}  // namespace shardgnn
