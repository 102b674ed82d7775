// The MPI layer: the only code that includes <mpi.h> (in communicator.cpp; this header keeps it
// out of every includer). Typed collectives in the spirit of KaMPIng: counts and displacements
// are computed here, not by callers; MPI errors become MpiError carrying MPI's error string; and
// run_guarded turns any exception into a job-wide outcome so that no rank is left hanging in a
// collective another rank will never enter.
//
// Thread safety: Environment asks for MPI_THREAD_MULTIPLE unless told otherwise. A Communicator may be used by one
// thread at a time; threads that communicate concurrently (the sampler's prefetch thread and the
// trainer) use separate communicators from dup(), so their collectives never interleave.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardgnn::comm {

// An MPI call failed; what() carries MPI's own error string.
class MpiError : public std::runtime_error {
 public:
  MpiError(const std::string& call, int code);
};

// A problem every rank detected identically (bad options, a rank count that does not fit the
// parts): run_guarded reports it and exits cleanly on every rank instead of aborting.
// It carries the status every rank exits with: 1, or a usage error's 2 (UsageFault).
class CollectiveError : public std::runtime_error {
 public:
  explicit CollectiveError(const std::string& what, int status = 1) : std::runtime_error(what), status_(status) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

// An error in what the user asked for (a model spec that cannot be built from its file or for
// its data): the job ends with exit status 2, as for a bad option, on every rank (agree and
// run_guarded carry the status).
class UsageFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
inline constexpr int kUsageStatus = 2;

enum class Kind { kInt32, kInt64, kUInt16, kUInt64, kFloat32, kFloat64, kByte };
template <class T> constexpr Kind kind_of();
template <> constexpr Kind kind_of<std::int32_t>() { return Kind::kInt32; }
template <> constexpr Kind kind_of<std::int64_t>() { return Kind::kInt64; }
template <> constexpr Kind kind_of<std::uint16_t>() { return Kind::kUInt16; }
template <> constexpr Kind kind_of<std::uint64_t>() { return Kind::kUInt64; }
template <> constexpr Kind kind_of<float>() { return Kind::kFloat32; }
template <> constexpr Kind kind_of<double>() { return Kind::kFloat64; }
template <> constexpr Kind kind_of<std::byte>() { return Kind::kByte; }
template <> constexpr Kind kind_of<char>() { return Kind::kByte; }
template <> constexpr Kind kind_of<std::uint8_t>() { return Kind::kByte; }

enum class Op { kSum, kMax, kMin };

// How a rank waits inside a collective. kSpin: MPI's own blocking calls, which busy-poll (lowest
// latency when every rank has a core of its own). kYield: nonblocking collectives completed by
// MPI_Test between short sleeps, so a waiting rank leaves its core to the ranks it waits for
// (what an oversubscribed node needs). Environment picks it from SHARDGNN_MPI_WAIT=spin|yield|auto
// (default auto: yield when the node's ranks outnumber its cores); all ranks agree on one mode
// (yield if any rank asks for it), since blocking and nonblocking collectives never match.
enum class WaitMode { kSpin, kYield };
void set_wait_mode(WaitMode mode);
WaitMode wait_mode();
// "spin", "yield" or "auto"/"" (decided from the node's rank and core counts); else invalid_argument.
WaitMode parse_wait_mode(const std::string& name, int ranks_on_node, int cores);

// How alltoallv (counts not known to the receiver) moves small payloads. Sent plainly, an exchange
// is two rounds: the counts, then the data; a batch of the sampler makes a dozen such exchanges of
// a few hundred bytes, each costing a network latency twice. Eager: one MPI_Alltoall of a fixed
// slot per peer carries the count and up to `inline_bytes` of payload, and only a pair whose
// payload is larger sends the rest point-to-point (both ends know it from the count), so a small
// exchange is one round and no rank has to decide anything with the others.
// SHARDGNN_EAGER_BYTES=auto|off|N picks it (default auto: 1 KiB per peer up to 64 ranks, then
// shrinking with the rank count to 64 B, so the slots stay 64 KiB a rank); all ranks agree (off
// unless every rank asked the same), since the two ways of exchanging never match each other.
struct EagerSetting {
  static constexpr std::int64_t kOff = -1, kAuto = -2;
  std::int64_t inline_bytes = kAuto;  // payload bytes inline per peer, or kOff / kAuto
};
void set_eager(EagerSetting setting);
EagerSetting eager_setting();
// "auto"/"" , "off" or a byte count (0 up to 1 MiB); else invalid_argument.
EagerSetting parse_eager(const std::string& text);
// The payload bytes inline per peer for `ranks` ranks: -1 when off.
std::int64_t eager_inline_bytes(EagerSetting setting, int ranks);

// Seconds the calling thread has spent inside collectives of any Communicator (cumulative): the
// part of a thread's time that is waiting for (and exchanging with) other ranks, not own work.
double collective_seconds() noexcept;

// Deadlines. Every wait for other ranks (each collective, the eager exchange's point-to-point
// messages, communicator set-up) is watched by a thread of the Environment: a wait that has not
// completed within the collective timeout means a rank or its link is lost (or stalled), and the
// rank prints one line (itself, its host, the MPI call, where the run stood and how long it
// waited) and ends with kExitLostPeer, never holding the job until the batch system's time limit.
// PyTorch's process groups do the same (a watchdog, 10 minutes by default for NCCL).
constexpr double kDefaultCollectiveTimeout = 600;  // seconds
constexpr int kExitLostPeer = 76;  // a peer was lost: distinct from 75 (stopped, resumable) and from a crash
// Seconds a wait may take (0: no deadline). Every rank should set the same.
void set_collective_timeout(double seconds);
double collective_timeout();
// "600", "90.5", "0" (off); else invalid_argument naming the option.
double parse_collective_timeout(const std::string& text);

// Within its scope, waits may take `factor` times the timeout, on every thread of the process: the
// phases whose ranks wait on one rank's long own work (rank 0 writing a checkpoint, the final
// full-neighbourhood evaluation, the partitioner's serial steps). Scopes nest (the largest wins).
class LongWaits {
 public:
  explicit LongWaits(double factor);
  ~LongWaits();
  LongWaits(const LongWaits&) = delete;
  LongWaits& operator=(const LongWaits&) = delete;

 private:
  double previous_;
};
constexpr double kLongWaitFactor = 6;

// Where the run stands, for the timeout's line: `phase` (a string literal, e.g. "training"), and
// the epoch and step (each < 0: not shown; 0-based, printed 1-based) of `steps`.
void set_position(const char* phase, std::int64_t epoch = -1, std::int64_t step = -1, std::int64_t steps = -1);

// MPI_Init_thread / MPI_Finalize for the process, and the watchdog of the waits. Construct exactly
// one, first thing in main. `threads`: true when several threads will call MPI at once
// (MPI_THREAD_MULTIPLE, e.g. the prefetch pipeline beside the trainer's all-reduce); false asks
// only for MPI_THREAD_FUNNELED, which spares MPICH the locking of its progress loop. `program`
// begins the watchdog's lines ("shardgnn train").
// At the end every rank passes a barrier (under the timeout) and then MPI_Finalize, which gets
// kFinalizeBound seconds: a finalize that does not return by then (UCX over TCP was seen to hang
// in it, openucx/ucx#8738) is left behind with a note, the process exiting with `exit_status`,
// since the run's outputs are written and every rank got that far.
constexpr double kFinalizeBound = 10;  // seconds
class Environment {
 public:
  Environment(int& argc, char**& argv, bool threads = true, const std::string& program = "shardgnn");
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  // The status the process ends with, should MPI_Finalize outlast its bound.
  void exit_status(int status) noexcept { status_ = status; }

 private:
  int status_ = 0;
};

// True when MPI is initialised with MPI_THREAD_MULTIPLE (several threads may communicate at once).
bool thread_multiple();

// Where each block starts when blocks of `counts` elements lie end to end.
inline std::vector<std::int64_t> prefix_displs(std::span<const std::int64_t> counts) {
  std::vector<std::int64_t> displs(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  return displs;
}

template <class T>
struct AlltoallvResult {
  std::vector<T> data;                 // everything received, grouped by source rank
  std::vector<std::int64_t> counts;    // elements from each rank
  std::vector<std::int64_t> displs;    // where each rank's elements start in data
  std::span<const T> from(int rank) const { return {data.data() + displs[rank], static_cast<std::size_t>(counts[rank])}; }
};

class Communicator {
 public:
  // A duplicate of MPI_COMM_WORLD (never the world handle itself, so library traffic cannot
  // collide with anyone else's).
  static Communicator world();
  // This process alone as a communicator of one rank, usable with MPI never started: one process
  // (a command run without a launcher) takes the same code paths as a job, and its collectives
  // are copies.
  static Communicator one_rank();
  // A new communicator over the same ranks, for another thread's collectives.
  Communicator dup() const;

  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  // All collectives block until every rank of the communicator has entered them.
  void barrier() const;
  template <class T>
  void allreduce_inplace(std::span<T> data, Op op) const { allreduce_raw(data.data(), static_cast<std::int64_t>(data.size()), kind_of<T>(), op); }
  template <class T>
  T allreduce(T value, Op op) const {
    allreduce_raw(&value, 1, kind_of<T>(), op);
    return value;
  }
  template <class T>
  void broadcast(std::span<T> data, int root) const { broadcast_raw(data.data(), static_cast<std::int64_t>(data.size() * sizeof(T)), root); }
  // `root`'s `data` on every rank, resized to it.
  template <class T>
  void broadcast_vector(std::vector<T>& data, int root) const {
    std::int64_t count = static_cast<std::int64_t>(data.size());
    broadcast_raw(&count, sizeof count, root);
    data.resize(static_cast<std::size_t>(count));
    broadcast_raw(data.data(), count * static_cast<std::int64_t>(sizeof(T)), root);
  }
  // One value from every rank, in rank order.
  template <class T>
  std::vector<T> allgather(const T& value) const {
    std::vector<T> out(static_cast<std::size_t>(size_));
    allgather_raw(&value, out.data(), sizeof(T));
    return out;
  }
  // Every rank's `mine`, concatenated in rank order (counts per rank in the result). Built on
  // alltoallv (each rank's block sent to all), so meant for small arrays (seed lists).
  template <class T>
  AlltoallvResult<T> allgatherv(std::span<const T> mine) const {
    std::vector<T> send;
    send.reserve(mine.size() * static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) send.insert(send.end(), mine.begin(), mine.end());
    const std::vector<std::int64_t> counts(static_cast<std::size_t>(size_), static_cast<std::int64_t>(mine.size()));
    return alltoallv<T>(send, counts);
  }
  // Sends send[displ_r .. displ_r + send_counts[r]) to rank r (displacements are the prefix sums
  // of send_counts) and returns what every rank sent here, with its counts. Counts may exceed
  // 2^31 elements (MPI-4 large-count calls).
  // Small payloads travel eagerly (EagerSetting): one round instead of two.
  template <class T>
  AlltoallvResult<T> alltoallv(std::span<const T> send, std::span<const std::int64_t> send_counts) const {
    AlltoallvResult<T> r;
    alltoallv_counted(send.data(), send_counts, sizeof(T), r.counts, [&r](std::int64_t elements) {
      r.data.resize(static_cast<std::size_t>(elements));
      return static_cast<void*>(r.data.data());
    });
    r.displs = prefix_displs(r.counts);
    return r;
  }
  // The same when the receiver already knows what each rank sends it (a reply to its own
  // request, say): no count exchange, one collective instead of two. recv_counts must match the
  // senders' send_counts exactly.
  template <class T>
  AlltoallvResult<T> alltoallv_known(std::span<const T> send, std::span<const std::int64_t> send_counts,
                                     std::span<const std::int64_t> recv_counts) const {
    AlltoallvResult<T> r;
    r.counts.assign(recv_counts.begin(), recv_counts.end());
    r.displs = prefix_displs(r.counts);
    r.data.resize(static_cast<std::size_t>(r.counts.empty() ? 0 : r.displs.back() + r.counts.back()));
    alltoallv_raw(send.data(), send_counts, r.data.data(), r.counts, sizeof(T));
    return r;
  }
  // alltoallv_known into a buffer the caller keeps between calls (its pages stay mapped): `recv`
  // must hold exactly the sum of recv_counts elements, rank r's block at the prefix sum.
  template <class T>
  void alltoallv_into(std::span<const T> send, std::span<const std::int64_t> send_counts, std::span<const std::int64_t> recv_counts, std::span<T> recv) const {
    std::int64_t total = 0;
    for (auto c : recv_counts) total += c;
    if (total != static_cast<std::int64_t>(recv.size()))
      throw std::logic_error("alltoallv_into: a buffer of " + std::to_string(recv.size()) + " for " + std::to_string(total) + " elements");
    alltoallv_raw(send.data(), send_counts, recv.data(), recv_counts, sizeof(T));
  }
  // Collective: for each rank of this communicator, an id of the node (shared-memory domain,
  // MPI_COMM_TYPE_SHARED) it runs on; ranks on one node share the id (the lowest rank there).
  std::vector<int> node_ids() const;
  // The cores this rank may use (collective): the CPUs of its affinity mask (the launcher's or the
  // batch system's binding), shared with the ranks of its node whose masks overlap it, and at
  // most SLURM_CPUS_PER_TASK (a job's allotment where nothing binds the tasks).
  struct CoreShare {
    int cpus = 1;           // CPUs in this rank's affinity mask
    int ranks_on_node = 1;  // ranks on this rank's node
    int local_rank = 0;     // this rank's place among them
    int sharing = 1;        // of them, those whose masks overlap this rank's (itself included)
    int per_task = 0;       // SLURM_CPUS_PER_TASK (0: unset)
    int cores = 1;          // what this rank may use: cpus / sharing, capped by per_task
  };
  CoreShare core_share() const;
  // True on every rank if `ok` is true on every rank.
  bool all(bool ok) const { return allreduce<std::int32_t>(ok ? 1 : 0, Op::kMin) == 1; }
  // Throws CollectiveError on every rank unless `ok` holds on every rank. The message of a rank
  // that failed travels to all (the lowest such rank's), so every rank reports the same line.
  // `status` is what CollectiveError carries (the lowest failing rank's).
  void check_all(bool ok, const std::string& message_if_not, int status = 1) const;

  // Ends the whole job now, from any rank, after printing `message` on this rank's stderr.
  [[noreturn]] void abort(const std::string& message, int code = 1) const;

 private:
  Communicator() = default;
  void allreduce_raw(void* data, std::int64_t count, Kind kind, Op op) const;
  void broadcast_raw(void* data, std::int64_t bytes, int root) const;
  void allgather_raw(const void* in, void* out, std::size_t bytes) const;
  std::vector<std::int64_t> exchange_counts(std::span<const std::int64_t> send_counts) const;
  // alltoallv when the receiver does not know the counts: fills recv_counts, asks `place` for a
  // buffer of their sum (elements) and receives into it, rank r's block at the prefix sum.
  void alltoallv_counted(const void* send, std::span<const std::int64_t> send_counts, std::size_t elem_bytes, std::vector<std::int64_t>& recv_counts,
                         const std::function<void*(std::int64_t)>& place) const;
  void alltoallv_eager(const void* send, std::span<const std::int64_t> send_counts, std::size_t elem_bytes, std::int64_t inline_bytes,
                       std::vector<std::int64_t>& recv_counts, const std::function<void*(std::int64_t)>& place) const;
  void alltoallv_raw(const void* send, std::span<const std::int64_t> send_counts, void* recv, std::span<const std::int64_t> recv_counts,
                     std::size_t elem_bytes) const;

  struct Handle;
  std::unique_ptr<Handle> handle_;
  int rank_ = 0, size_ = 1;
};

// Runs `local` (work of this rank alone, no collectives) and then every rank agrees on how it
// went: when it threw on any rank, every rank throws CollectiveError with the message of the
// lowest such rank (check_all). For checks that must not leave a rank behind in a collective. On
// one rank nobody waits: the exception goes on as it was thrown (a usage error stays one).
template <class F>
void agree(const Communicator& comm, F&& local) {
  if (comm.size() == 1) return static_cast<void>(local());
  std::string error;
  int status = 1;
  try {
    local();
  } catch (const UsageFault& e) {
    error = e.what();
    status = kUsageStatus;
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "unknown error";
  }
  comm.check_all(error.empty(), error, status);
}

// Runs `body` on this rank. An exception on any rank ends the job without a hang: a
// CollectiveError (raised on every rank by check_all) prints "<prefix>: error: rank R/N: ..." on
// every rank and returns 1 on every rank for a clean exit; anything else prints
// "<prefix>: error: rank R: ..." and calls MPI_Abort, which ends every rank. On one rank, where no
// peer can be left waiting, every exception is reported as a CollectiveError is.
int run_guarded(const std::string& prefix, const Communicator& comm, const std::function<int()>& body);

}  // namespace shardgnn::comm
