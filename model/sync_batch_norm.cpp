#include "model/sync_batch_norm.hpp"

#include <span>

namespace shardgnn {

namespace {

// The sum over ranks of a float64 vector, on the tensor's device.
torch::Tensor sum_over_ranks(const torch::Tensor& t, const comm::Communicator& comm) {
  torch::Tensor host = t.to(torch::kCPU, torch::kDouble).contiguous().clone();
  comm.allreduce_inplace(std::span<double>(host.data_ptr<double>(), static_cast<std::size_t>(host.numel())), comm::Op::kSum);
  return host.to(t.device());
}

// y = the sum over ranks of x; dL/dx = the sum over ranks of dL/dy (every rank's loss depends on
// every rank's x through y).
struct SumOverRanks : torch::autograd::Function<SumOverRanks> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const comm::Communicator* comm) {
    ctx->saved_data["comm"] = reinterpret_cast<std::int64_t>(comm);
    return sum_over_ranks(x, *comm);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad) {
    const auto* comm = reinterpret_cast<const comm::Communicator*>(ctx->saved_data["comm"].toInt());
    return {sum_over_ranks(grad[0], *comm), torch::Tensor()};
  }
};

// The running statistics moved towards the global batch's (n rows, its mean and biased variance),
// as BatchNorm1d moves them: momentum, the variance unbiased.
void track(torch::nn::BatchNorm1dImpl& bn, const torch::Tensor& mean, const torch::Tensor& var, double n) {
  torch::NoGradGuard no_grad;
  const double m = bn.options.momentum().value_or(0.1);
  bn.running_mean.mul_(1 - m).add_(mean.detach().to(bn.running_mean.device(), bn.running_mean.scalar_type()), m);
  bn.running_var.mul_(1 - m).add_((var.detach() * (n / (n - 1))).to(bn.running_var.device(), bn.running_var.scalar_type()), m);
  bn.num_batches_tracked.add_(1);
}

}  // namespace

torch::Tensor synced_batch_norm(const torch::Tensor& x, torch::nn::BatchNorm1dImpl& bn, const comm::Communicator& comm) {
  const std::int64_t C = x.size(1);
  // Sums in float64: the variance is E[x^2] - E[x]^2 over the global batch.
  const torch::Tensor xd = x.to(torch::kDouble);
  const torch::Tensor local = torch::cat({xd.sum(0), (xd * xd).sum(0), torch::full({1}, static_cast<double>(x.size(0)), xd.options())});
  const torch::Tensor global = SumOverRanks::apply(local, &comm);
  const double n = global[2 * C].item<double>();
  const auto& o = bn.options;
  if (n < 2) return torch::batch_norm(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, /*training=*/false, o.momentum().value_or(0.1), o.eps(), false);
  const torch::Tensor mean = global.slice(0, 0, C) / n;
  const torch::Tensor var = (global.slice(0, C, 2 * C) / n - mean * mean).clamp_min(0);
  track(bn, mean, var, n);
  torch::Tensor y = (x - mean.to(x.scalar_type())) * torch::rsqrt(var + o.eps()).to(x.scalar_type());
  if (o.affine()) y = y * bn.weight + bn.bias;
  return y;
}

void synced_batch_norm_nothing(const std::vector<torch::nn::BatchNorm1dImpl*>& layers, const comm::Communicator& comm) {
  std::vector<double> rows;
  for (torch::nn::BatchNorm1dImpl* bn : layers) {
    const std::int64_t C = bn->options.num_features();
    const torch::Tensor global = sum_over_ranks(torch::zeros({2 * C + 1}, torch::kDouble), comm);
    const double n = global[2 * C].item<double>();
    rows.push_back(n);
    if (n >= 2) {
      const torch::Tensor mean = global.slice(0, 0, C) / n;
      track(*bn, mean, (global.slice(0, C, 2 * C) / n - mean * mean).clamp_min(0), n);
    }
  }
  // The backward pass visits the layers last to first, each whose global batch had the rows to
  // be normalised with its statistics.
  for (std::size_t i = layers.size(); i-- > 0;)
    if (rows[i] >= 2) sum_over_ranks(torch::zeros({2 * layers[i]->options.num_features() + 1}, torch::kDouble), comm);
}

}  // namespace shardgnn
