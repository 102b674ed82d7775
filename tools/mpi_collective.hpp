// PartitionCollective over an MPI communicator: how the `partition` MPI program, and the tests
// that run partitioning under mpiexec, give partition/ its collectives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "partition/collective.hpp"

namespace shardgnn {

class MpiCollective final : public PartitionCollective {
 public:
  explicit MpiCollective(const comm::Communicator& c) : c_(c) {}
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  void sum(std::span<std::int64_t> data) const override { c_.allreduce_inplace(data, comm::Op::kSum); }
  void max(std::span<std::int64_t> data) const override { c_.allreduce_inplace(data, comm::Op::kMax); }
  void check_all(bool ok, const std::string& message_if_not) const override { c_.check_all(ok, message_if_not); }

 protected:
  std::vector<std::int64_t> exchange_counts(std::span<const std::int64_t> counts) const override {
    const std::vector<std::int64_t> one(counts.size(), 1);
    return c_.alltoallv<std::int64_t>(counts, one).data;
  }
  void exchange(const void* send, std::span<const std::int64_t> send_bytes, void* recv, std::span<const std::int64_t> recv_bytes) const override {
    std::int64_t sent = 0, received = 0;
    for (auto b : send_bytes) sent += b;
    for (auto b : recv_bytes) received += b;
    c_.alltoallv_into<std::byte>(std::span<const std::byte>(static_cast<const std::byte*>(send), static_cast<std::size_t>(sent)), send_bytes, recv_bytes,
                                 std::span<std::byte>(static_cast<std::byte*>(recv), static_cast<std::size_t>(received)));
  }
  void broadcast_bytes(void* data, std::int64_t bytes, int root) const override {
    c_.broadcast(std::span<std::byte>(static_cast<std::byte*>(data), static_cast<std::size_t>(bytes)), root);
  }

 private:
  const comm::Communicator& c_;
};

}  // namespace shardgnn
