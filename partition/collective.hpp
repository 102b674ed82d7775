// The collectives that partitioning spread over ranks needs, so that partition/ stays free of
// MPI: the `partition` MPI program supplies them over its communicator (tools/partition_mpi.cpp),
// and one process uses SerialCollective, under which every collective is the identity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <span>
#include <string>
#include <vector>

namespace shardgnn {

class PartitionCollective {
 public:
  virtual ~PartitionCollective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Element-wise sum / maximum over the ranks, in place.
  virtual void sum(std::span<std::int64_t> data) const = 0;
  virtual void max(std::span<std::int64_t> data) const = 0;
  // Throws on every rank unless `ok` holds on every rank, with the message of the lowest failing
  // rank: a rank's failure becomes every rank's before the next collective, never a hang.
  virtual void check_all(bool ok, const std::string& message_if_not) const = 0;
  // True on every rank when `ok` holds on every rank.
  bool all_true(bool ok) const {
    std::int64_t failed = ok ? 0 : 1;
    max(std::span<std::int64_t>(&failed, 1));
    return failed == 0;
  }
  // Runs `local` (no collectives inside), then every rank learns whether it threw anywhere: one
  // process rethrows its own exception as it was; several all throw check_all's.
  template <class F>
  void agree(F&& local) const {
    std::exception_ptr error;
    std::string message;
    try {
      local();
    } catch (const std::exception& e) {
      error = std::current_exception();
      message = e.what();
    }
    if (size() == 1) {
      if (error) std::rethrow_exception(error);
      return;
    }
    check_all(!error, message);
  }

  // Sends send[prefix(counts)[r] ..][0 .. counts[r]) to rank r; returns what every rank sent here,
  // in rank order, with the counts per source in *recv_counts when asked.
  template <class T>
  std::vector<T> alltoallv(std::span<const T> send, std::span<const std::int64_t> counts, std::vector<std::int64_t>* recv_counts = nullptr) const {
    const std::vector<std::int64_t> from = exchange_counts(counts);
    std::vector<std::int64_t> send_bytes(counts.size()), recv_bytes(from.size());
    std::int64_t total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) send_bytes[r] = counts[r] * static_cast<std::int64_t>(sizeof(T));
    for (std::size_t r = 0; r < from.size(); ++r) {
      recv_bytes[r] = from[r] * static_cast<std::int64_t>(sizeof(T));
      total += from[r];
    }
    std::vector<T> out(static_cast<std::size_t>(total));
    exchange(send.data(), send_bytes, out.data(), recv_bytes);
    if (recv_counts) *recv_counts = from;
    return out;
  }
  // `root`'s `data` on every rank (resized to it).
  template <class T>
  void broadcast(std::vector<T>& data, int root) const {
    std::int64_t count = static_cast<std::int64_t>(data.size());
    broadcast_bytes(&count, sizeof count, root);
    data.resize(static_cast<std::size_t>(count));
    broadcast_bytes(data.data(), count * static_cast<std::int64_t>(sizeof(T)), root);
  }
  // Every rank's `mine`, concatenated in rank order (sent to each rank in turn: for arrays that
  // are every rank's share, not one rank's whole).
  template <class T>
  std::vector<T> allgatherv(std::span<const T> mine, std::vector<std::int64_t>* counts = nullptr) const {
    const auto p = static_cast<std::size_t>(size());
    std::vector<T> send;
    send.reserve(mine.size() * p);
    for (std::size_t r = 0; r < p; ++r) send.insert(send.end(), mine.begin(), mine.end());
    const std::vector<std::int64_t> each(p, static_cast<std::int64_t>(mine.size()));
    return alltoallv<T>(send, each, counts);
  }

 protected:
  // The count exchange and the byte exchange under alltoallv.
  virtual std::vector<std::int64_t> exchange_counts(std::span<const std::int64_t> counts) const = 0;
  virtual void exchange(const void* send, std::span<const std::int64_t> send_bytes, void* recv, std::span<const std::int64_t> recv_bytes) const = 0;
  virtual void broadcast_bytes(void* data, std::int64_t bytes, int root) const = 0;
};

// One process: rank 0 of 1.
class SerialCollective final : public PartitionCollective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void sum(std::span<std::int64_t>) const override {}
  void max(std::span<std::int64_t>) const override {}
  void check_all(bool ok, const std::string& message_if_not) const override {
    if (!ok) throw std::runtime_error(message_if_not);
  }

 protected:
  std::vector<std::int64_t> exchange_counts(std::span<const std::int64_t> counts) const override { return {counts.begin(), counts.end()}; }
  void exchange(const void* send, std::span<const std::int64_t> send_bytes, void* recv, std::span<const std::int64_t>) const override {
    if (send_bytes[0] > 0) std::memcpy(recv, send, static_cast<std::size_t>(send_bytes[0]));
  }
  void broadcast_bytes(void*, std::int64_t, int) const override {}
};

}  // namespace shardgnn
