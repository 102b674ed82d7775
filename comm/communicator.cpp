#include "comm/communicator.hpp"

#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>
#include <type_traits>

namespace shardgnn::comm {

namespace {

std::string mpi_error_string(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(buf, static_cast<std::size_t>(len));
}

void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) throw MpiError(call, rc);
}

MPI_Datatype datatype(Kind k) {
  switch (k) {
    case Kind::kInt32: return MPI_INT32_T;
    case Kind::kInt64: return MPI_INT64_T;
    case Kind::kUInt16: return MPI_UINT16_T;
    case Kind::kUInt64: return MPI_UINT64_T;
    case Kind::kFloat32: return MPI_FLOAT;
    case Kind::kFloat64: return MPI_DOUBLE;
    case Kind::kByte: return MPI_BYTE;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(Op op) {
  switch (op) {
    case Op::kSum: return MPI_SUM;
    case Op::kMax: return MPI_MAX;
    case Op::kMin: return MPI_MIN;
  }
  return MPI_SUM;
}

std::atomic<WaitMode> g_wait_mode{WaitMode::kSpin};
std::atomic<std::int64_t> g_eager{EagerSetting::kAuto};
// The eager exchange's point-to-point tag (no other point-to-point traffic on our communicators).
constexpr int kEagerTag = 0x5347;
constexpr std::int64_t kMaxEagerBytes = 1 << 20;
thread_local double t_collective_s = 0;

// Adds the lifetime of the scope to the calling thread's time in collectives.
class CollectiveTimer {
 public:
  CollectiveTimer() { clock_gettime(CLOCK_MONOTONIC, &start_); }
  ~CollectiveTimer() {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    t_collective_s += static_cast<double>(now.tv_sec - start_.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec - start_.tv_nsec);
  }

 private:
  timespec start_;
};

std::int64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

// ---- The watchdog of the waits (see set_collective_timeout).

std::atomic<double> g_timeout_s{kDefaultCollectiveTimeout};
std::atomic<double> g_long_factor{1};
std::atomic<const char*> g_phase{"start-up"};
std::atomic<std::int64_t> g_epoch{-1}, g_step{-1}, g_steps{-1};
std::atomic<int> g_rank{-1}, g_size{0};  // MPI_COMM_WORLD's, once MPI has started
char g_host[256] = "?";
char g_program[128] = "shardgnn";

// What one thread is waiting for. A wait of kind kExit (MPI_Finalize, MPI_Abort) is bounded by
// kFinalizeBound and then left behind, the process exiting with the slot's status.
enum WaitKind : int { kCollective = 0, kExit = 1 };
struct WaitSlot {
  std::atomic<bool> owned{false};
  std::atomic<std::int64_t> since_ns{0};  // 0: not waiting
  std::atomic<const char*> what{nullptr};
  std::atomic<int> kind{kCollective};
  std::atomic<int> exit_status{0};
};
// Threads that wait at once: the trainer, the prefetch thread, a few more; a thread's slot is
// freed when it ends (the prefetch threads come and go epoch by epoch).
constexpr int kWaitSlots = 64;
WaitSlot g_slots[kWaitSlots];

struct SlotHolder {
  WaitSlot* slot = nullptr;
  SlotHolder() {
    for (WaitSlot& s : g_slots) {
      bool expected = false;
      if (s.owned.compare_exchange_strong(expected, true)) {
        slot = &s;
        return;
      }
    }
  }
  ~SlotHolder() {
    if (slot) {
      slot->since_ns.store(0);
      slot->owned.store(false);
    }
  }
};
thread_local SlotHolder t_slot;

// Marks the calling thread as waiting in `what` for its scope (not nested: leaf MPI calls only).
class Watched {
 public:
  explicit Watched(const char* what, WaitKind kind = kCollective, int exit_status = 0) : slot_(t_slot.slot) {
    if (!slot_) return;  // more waiting threads than slots: unwatched
    slot_->what.store(what, std::memory_order_relaxed);
    slot_->kind.store(kind, std::memory_order_relaxed);
    slot_->exit_status.store(exit_status, std::memory_order_relaxed);
    slot_->since_ns.store(now_ns(), std::memory_order_release);
  }
  ~Watched() {
    if (slot_) slot_->since_ns.store(0, std::memory_order_release);
  }
  Watched(const Watched&) = delete;
  Watched& operator=(const Watched&) = delete;

 private:
  WaitSlot* slot_;
};

// Writes `text` to stderr without stdio's lock (another thread may hold it while it waits).
void write_stderr(const char* text) {
  for (std::size_t n = std::strlen(text); n > 0;) {
    const ssize_t w = ::write(2, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

// "rank 1/2 on node1 (pid 4242)", or "rank ?" before MPI has said.
std::string whoami() {
  const int rank = g_rank.load();
  return (rank < 0 ? std::string("rank ?") : "rank " + std::to_string(rank) + "/" + std::to_string(g_size.load())) + " on " + g_host + " (pid " +
         std::to_string(::getpid()) + ")";
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s == std::floor(s) ? "%.0f" : "%.3g", s);
  return buf;
}

[[noreturn]] void end_waiting(const WaitSlot& slot, double waited_s, double limit_s) {
  std::string line;
  int status = kExitLostPeer;
  const char* what = slot.what.load();
  if (slot.kind.load() == kExit) {
    status = slot.exit_status.load();
    line = std::string(g_program) + ": note: " + whoami() + ": " + what + " has not returned in " + seconds_text(limit_s) + " s; exiting without it (status " +
           std::to_string(status) + ")\n";
  } else {
    std::string where = g_phase.load();
    if (const auto e = g_epoch.load(); e >= 0) where += ", epoch " + std::to_string(e + 1);
    if (const auto st = g_step.load(); st >= 0) where += ", step " + std::to_string(st + 1) + (g_steps.load() > 0 ? " of " + std::to_string(g_steps.load()) : "");
    const double factor = g_long_factor.load();
    line = std::string(g_program) + ": error: " + whoami() + ": " + what + " has waited " + seconds_text(std::round(waited_s)) + " s for the other ranks (" +
           where + "; --collective-timeout " + seconds_text(g_timeout_s.load()) + (factor > 1 ? " x" + seconds_text(factor) + " in this phase" : "") +
           "): a rank or its network link is lost or stalled; ending the job (status " + std::to_string(status) + ")\n";
  }
  write_stderr(line.c_str());
  // What progress stdout holds, unless another thread holds its lock.
  if (ftrylockfile(stdout) == 0) {
    fflush_unlocked(stdout);
    funlockfile(stdout);
  }
  std::_Exit(status);
}

// The thread that ends a rank whose wait has outlived its deadline. It never calls MPI.
class Watchdog {
 public:
  Watchdog() : thread_([this] { run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(m_);
    while (!stop_) {
      // Looks often enough that a rank ends soon after its deadline, rarely enough to cost nothing.
      const double timeout = g_timeout_s.load();
      const double shortest = timeout > 0 ? std::min(timeout, kFinalizeBound) : kFinalizeBound;
      cv_.wait_for(lock, std::chrono::duration<double>(std::clamp(shortest / 20, 0.01, 1.0)));
      if (stop_) return;
      look();
    }
  }
  static void look() {
    const std::int64_t now = now_ns();
    for (const WaitSlot& s : g_slots) {
      const std::int64_t since = s.since_ns.load(std::memory_order_acquire);
      if (since == 0) continue;
      const double waited = 1e-9 * static_cast<double>(now - since);
      const double limit = s.kind.load() == kExit ? kFinalizeBound : g_timeout_s.load() * g_long_factor.load();
      if (limit > 0 && waited > limit) end_waiting(s, waited, limit);
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};
std::unique_ptr<Watchdog> g_watchdog;

// Polls `done` (which calls MPI_Test or the like: MPI progresses inside it) until it returns
// true, without holding the core: a short spin (latency when the others are ready), then polls
// between sleeps growing from 1 to 100 us.
template <class Poll>
void polite_until(Poll done) {
  for (int spin = 0; spin < 200; ++spin)
    if (done()) return;
  long ns = 1000;
  while (true) {
    timespec ts{0, ns};
    nanosleep(&ts, nullptr);
    if (done()) return;
    ns = ns < 100000 ? ns * 2 : 100000;
  }
}

bool yielding() { return g_wait_mode.load(std::memory_order_relaxed) == WaitMode::kYield; }

// A wait's MPI calls as its errors name them: the blocking form (spin) and the nonblocking one (yield).
struct Calls {
  const char* blocking;
  const char* nonblocking;
};

// The one place a rank waits for other ranks (the watchdog bounds it). Spin makes the blocking call, since MPICH busy-polls
// inside it at its lowest latency when every rank has a core; yield starts the nonblocking form
// (`start` posts one request, or is a span of requests already posted) and tests it between sleeps
// so that a waiting rank leaves its core to the ranks it waits for.
template <class Blocking, class Start>
void complete(Calls what, Blocking&& blocking, Start&& start) {
  const Watched watched(what.blocking);  // the deadline, in both modes
  if (!yielding()) return check(blocking(), what.blocking);
  if constexpr (std::is_convertible_v<Start, std::span<MPI_Request>>) {
    const std::span<MPI_Request> posted = start;
    polite_until([&] {
      int done = 0;
      check(MPI_Testall(static_cast<int>(posted.size()), posted.data(), &done, MPI_STATUSES_IGNORE), what.nonblocking);
      return done != 0;
    });
  } else {
    MPI_Request req;
    check(start(&req), what.nonblocking);
    polite_until([&] {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what.nonblocking);
      return done != 0;
    });
  }
}

}  // namespace

double collective_seconds() noexcept { return t_collective_s; }

void set_collective_timeout(double seconds) { g_timeout_s.store(seconds > 0 ? seconds : 0); }
double collective_timeout() { return g_timeout_s.load(); }

double parse_collective_timeout(const std::string& text) {
  std::size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(v) || v < 0)
    throw std::invalid_argument("--collective-timeout " + text + ": expected seconds (a number >= 0; 0 turns the deadline off)");
  return v;
}

LongWaits::LongWaits(double factor) : previous_(g_long_factor.load()) { g_long_factor.store(std::max(previous_, factor)); }
LongWaits::~LongWaits() { g_long_factor.store(previous_); }

void set_position(const char* phase, std::int64_t epoch, std::int64_t step, std::int64_t steps) {
  g_phase.store(phase, std::memory_order_relaxed);
  g_epoch.store(epoch, std::memory_order_relaxed);
  g_step.store(step, std::memory_order_relaxed);
  g_steps.store(steps, std::memory_order_relaxed);
}

void set_wait_mode(WaitMode mode) { g_wait_mode.store(mode, std::memory_order_relaxed); }

WaitMode wait_mode() { return g_wait_mode.load(std::memory_order_relaxed); }

WaitMode parse_wait_mode(const std::string& name, int ranks_on_node, int cores) {
  if (name == "spin") return WaitMode::kSpin;
  if (name == "yield") return WaitMode::kYield;
  if (name == "auto" || name.empty()) return ranks_on_node > cores ? WaitMode::kYield : WaitMode::kSpin;
  throw std::invalid_argument("SHARDGNN_MPI_WAIT=" + name + ": expected spin, yield or auto");
}

void set_eager(EagerSetting setting) { g_eager.store(setting.inline_bytes, std::memory_order_relaxed); }

EagerSetting eager_setting() { return {g_eager.load(std::memory_order_relaxed)}; }

EagerSetting parse_eager(const std::string& text) {
  if (text.empty() || text == "auto") return {EagerSetting::kAuto};
  if (text == "off") return {EagerSetting::kOff};
  const bool digits = text.size() <= 8 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::int64_t bytes = digits ? std::stoll(text) : -1;
  if (bytes < 0 || bytes > kMaxEagerBytes)
    throw std::invalid_argument("SHARDGNN_EAGER_BYTES=" + text + ": expected auto, off or a byte count from 0 to " + std::to_string(kMaxEagerBytes));
  return {static_cast<std::int64_t>(bytes)};
}

std::int64_t eager_inline_bytes(EagerSetting setting, int ranks) {
  if (setting.inline_bytes == EagerSetting::kOff) return -1;
  if (setting.inline_bytes != EagerSetting::kAuto) return setting.inline_bytes;
  // A slot (count and payload) of 1 KiB per peer, smaller beyond 64 ranks so that a rank's slots
  // stay 64 KiB, and never under 64 bytes.
  const std::int64_t slot = std::clamp<std::int64_t>(std::int64_t{65536} / std::max(1, ranks), 64, 1024);
  return slot - static_cast<std::int64_t>(sizeof(std::int64_t));
}

MpiError::MpiError(const std::string& call, int code) : std::runtime_error(call + " failed: " + mpi_error_string(code)) {}

// MPI was already up when the Environment began (a Python process that imported mpi4py first):
// it is used as it is, and left for its host to finalise.
namespace {
bool g_adopted = false;
}  // namespace

Environment::Environment(int& argc, char**& argv, bool threads, const std::string& program) {
  std::snprintf(g_program, sizeof g_program, "%s", program.c_str());
  if (::gethostname(g_host, sizeof g_host - 1) != 0) std::snprintf(g_host, sizeof g_host, "?");
  // Watching from before MPI starts: a start-up that cannot reach a node is bounded too.
  g_watchdog = std::make_unique<Watchdog>();
  int provided = 0, initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    g_adopted = true;  // brought up by its host (mpi4py in a Python process), which ends it
  } else {
    const Watched watched("MPI_Init_thread");
    check(MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_size.store(size);
  g_rank.store(rank);
  // Errors come back as codes (turned into MpiError) instead of killing the job unexplained.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  // How to wait in collectives: MPICH busy-polls, which is right when every rank has its core and
  // ruinous when ranks share cores (a waiting rank steals the core of the rank it waits for).
  MPI_Comm node = MPI_COMM_NULL;
  int on_node = 1;
  const Watched watched("MPI_Comm_split_type and MPI_Allreduce (start-up)");
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &on_node);
    MPI_Comm_free(&node);
  }
  const char* env = std::getenv("SHARDGNN_MPI_WAIT");
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  WaitMode mine;
  try {
    mine = parse_wait_mode(env ? env : "auto", on_node, cores > 0 ? cores : 1);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "warning: %s; using auto\n", e.what());
    mine = parse_wait_mode("auto", on_node, cores > 0 ? cores : 1);
  }
  // Blocking and nonblocking collectives never match each other: every rank must wait the same
  // way. Yield wins when any rank asks for it (an oversubscribed node anywhere).
  int yield = mine == WaitMode::kYield ? 1 : 0;
  check(MPI_Allreduce(MPI_IN_PLACE, &yield, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  set_wait_mode(yield ? WaitMode::kYield : WaitMode::kSpin);
  // The eager exchange needs the same slot on every rank: off unless all asked for the same.
  EagerSetting eager;
  const char* eager_env = std::getenv("SHARDGNN_EAGER_BYTES");
  try {
    eager = parse_eager(eager_env ? eager_env : "auto");
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "warning: %s; using auto\n", e.what());
  }
  std::int64_t range[2] = {eager.inline_bytes, -eager.inline_bytes};
  check(MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  if (range[0] != -range[1]) {
    if (rank == 0) std::fprintf(stderr, "warning: SHARDGNN_EAGER_BYTES differs between ranks; using off\n");
    eager.inline_bytes = EagerSetting::kOff;
  }
  set_eager(eager);
}

bool thread_multiple() {
  int level = MPI_THREAD_SINGLE;
  return MPI_Query_thread(&level) == MPI_SUCCESS && level >= MPI_THREAD_MULTIPLE;
}

Environment::~Environment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !g_adopted) {
    {
      // Every rank has written its outputs: past this barrier, no rank needs another.
      const Watched watched("MPI_Barrier (the last)");
      MPI_Barrier(MPI_COMM_WORLD);
    }
    set_position("MPI_Finalize");
    const Watched watched("MPI_Finalize", kExit, status_);
    MPI_Finalize();
  }
  g_watchdog.reset();
}

struct Communicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  // The eager exchange's slots and requests, kept between calls (one thread uses a communicator).
  std::vector<std::byte> out_slots, in_slots;
  std::vector<MPI_Request> requests;
  ~Handle() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
  }
};

Communicator Communicator::world() {
  Communicator c;
  c.handle_ = std::make_unique<Handle>();
  const Watched watched("MPI_Comm_dup");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &c.handle_->comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(c.handle_->comm, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(c.handle_->comm, &c.rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(c.handle_->comm, &c.size_), "MPI_Comm_size");
  return c;
}

// A communicator without a handle is one_rank(): every collective below is then a copy, done
// without MPI (which may never have started).
Communicator Communicator::one_rank() { return Communicator(); }

Communicator Communicator::dup() const {
  if (!handle_) return one_rank();
  Communicator c;
  c.handle_ = std::make_unique<Handle>();
  const Watched watched("MPI_Comm_dup");
  check(MPI_Comm_dup(handle_->comm, &c.handle_->comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(c.handle_->comm, MPI_ERRORS_RETURN);
  c.rank_ = rank_;
  c.size_ = size_;
  return c;
}

Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

void Communicator::barrier() const {
  if (!handle_) return;
  CollectiveTimer timer;
  const MPI_Comm c = handle_->comm;
  complete({"MPI_Barrier", "MPI_Ibarrier"}, [&] { return MPI_Barrier(c); }, [&](MPI_Request* req) { return MPI_Ibarrier(c, req); });
}

std::vector<int> Communicator::node_ids() const {
  if (!handle_) return {0};
  int leader = rank_;
  {
    // Once at setup: the node communicator's blocking all-reduce, whatever the wait mode.
    CollectiveTimer timer;
    const Watched watched("MPI_Comm_split_type and MPI_Allreduce (node ids)");
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(handle_->comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    const int rc = MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    check(rc, "MPI_Allreduce");
  }
  return allgather(leader);  // timed by itself
}

Communicator::CoreShare Communicator::core_share() const {
  CoreShare share;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) == 0) share.cpus = std::max(1, CPU_COUNT(&mine));
  else CPU_ZERO(&mine);  // unknown: overlaps nobody, counts as one CPU
  if (const char* v = std::getenv("SLURM_CPUS_PER_TASK")) share.per_task = std::max(0, std::atoi(v));
  std::vector<cpu_set_t> masks{mine};
  if (handle_) {
    CollectiveTimer timer;
    const Watched watched("MPI_Comm_split_type and MPI_Allgather (core share)");
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(handle_->comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int on_node = 1;
    MPI_Comm_size(node, &on_node);
    MPI_Comm_rank(node, &share.local_rank);
    masks.resize(static_cast<std::size_t>(on_node));
    const int rc = MPI_Allgather(&mine, sizeof mine, MPI_BYTE, masks.data(), sizeof mine, MPI_BYTE, node);
    MPI_Comm_free(&node);
    check(rc, "MPI_Allgather");
    share.ranks_on_node = on_node;
  }
  share.sharing = 0;
  for (cpu_set_t& other : masks) {
    cpu_set_t both;
    CPU_AND(&both, &mine, &other);
    if (CPU_COUNT(&both) > 0) ++share.sharing;
  }
  share.sharing = std::max(1, share.sharing);
  share.cores = std::max(1, share.cpus / share.sharing);
  if (share.per_task > 0) share.cores = std::min(share.cores, share.per_task);
  return share;
}

void Communicator::allreduce_raw(void* data, std::int64_t count, Kind kind, Op op) const {
  if (!handle_) return;
  CollectiveTimer timer;
  const auto n = static_cast<MPI_Count>(count);
  const MPI_Datatype type = datatype(kind);
  const MPI_Op reduce = mpi_op(op);
  const MPI_Comm c = handle_->comm;
  complete({"MPI_Allreduce", "MPI_Iallreduce"}, [&] { return MPI_Allreduce_c(MPI_IN_PLACE, data, n, type, reduce, c); },
           [&](MPI_Request* req) { return MPI_Iallreduce_c(MPI_IN_PLACE, data, n, type, reduce, c, req); });
}

void Communicator::broadcast_raw(void* data, std::int64_t bytes, int root) const {
  if (!handle_) return;
  CollectiveTimer timer;
  const auto n = static_cast<MPI_Count>(bytes);
  const MPI_Comm c = handle_->comm;
  complete({"MPI_Bcast", "MPI_Ibcast"}, [&] { return MPI_Bcast_c(data, n, MPI_BYTE, root, c); },
           [&](MPI_Request* req) { return MPI_Ibcast_c(data, n, MPI_BYTE, root, c, req); });
}

void Communicator::allgather_raw(const void* in, void* out, std::size_t bytes) const {
  if (!handle_) return static_cast<void>(bytes > 0 ? std::memcpy(out, in, bytes) : out);
  CollectiveTimer timer;
  const int n = static_cast<int>(bytes);
  const MPI_Comm c = handle_->comm;
  complete({"MPI_Allgather", "MPI_Iallgather"}, [&] { return MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, c); },
           [&](MPI_Request* req) { return MPI_Iallgather(in, n, MPI_BYTE, out, n, MPI_BYTE, c, req); });
}

std::vector<std::int64_t> Communicator::exchange_counts(std::span<const std::int64_t> send_counts) const {
  if (static_cast<int>(send_counts.size()) != size_)
    throw std::logic_error("alltoallv: " + std::to_string(send_counts.size()) + " send counts for " + std::to_string(size_) + " ranks");
  if (!handle_) return {send_counts.begin(), send_counts.end()};
  std::vector<std::int64_t> recv(static_cast<std::size_t>(size_));
  CollectiveTimer timer;
  const MPI_Comm c = handle_->comm;
  complete({"MPI_Alltoall", "MPI_Ialltoall"}, [&] { return MPI_Alltoall(send_counts.data(), 1, MPI_INT64_T, recv.data(), 1, MPI_INT64_T, c); },
           [&](MPI_Request* req) { return MPI_Ialltoall(send_counts.data(), 1, MPI_INT64_T, recv.data(), 1, MPI_INT64_T, c, req); });
  return recv;
}

void Communicator::alltoallv_counted(const void* send, std::span<const std::int64_t> send_counts, std::size_t elem_bytes,
                                     std::vector<std::int64_t>& recv_counts, const std::function<void*(std::int64_t)>& place) const {
  if (static_cast<int>(send_counts.size()) != size_)
    throw std::logic_error("alltoallv: " + std::to_string(send_counts.size()) + " send counts for " + std::to_string(size_) + " ranks");
  if (const std::int64_t inline_bytes = eager_inline_bytes(eager_setting(), size_); inline_bytes >= 0 && handle_)
    return alltoallv_eager(send, send_counts, elem_bytes, inline_bytes, recv_counts, place);
  recv_counts = exchange_counts(send_counts);
  std::int64_t total = 0;
  for (std::int64_t c : recv_counts) total += c;
  alltoallv_raw(send, send_counts, place(total), recv_counts, elem_bytes);
}

void Communicator::alltoallv_eager(const void* send, std::span<const std::int64_t> send_counts, std::size_t elem_bytes, std::int64_t inline_bytes,
                                   std::vector<std::int64_t>& recv_counts, const std::function<void*(std::int64_t)>& place) const {
  const auto n = static_cast<std::size_t>(size_);
  const auto eb = static_cast<std::int64_t>(elem_bytes);
  const std::int64_t fit = inline_bytes / eb;  // elements a slot carries
  const std::size_t slot = sizeof(std::int64_t) + static_cast<std::size_t>(fit * eb);
  Handle& h = *handle_;
  h.out_slots.resize(n * slot);
  h.in_slots.resize(n * slot);
  h.requests.clear();
  const auto* from = static_cast<const std::byte*>(send);
  CollectiveTimer timer;
  // Each slot: the count, then the payload's first elements; the rest of a large payload goes
  // point-to-point, posted before the slots travel so that it is under way sooner.
  std::int64_t at = 0, own_at = 0;  // own_at: where this rank's block to itself starts in `send`
  for (std::size_t r = 0; r < n; ++r) {
    const std::int64_t count = send_counts[r];
    if (static_cast<int>(r) == rank_) own_at = at;
    std::byte* s = h.out_slots.data() + r * slot;
    std::memcpy(s, &count, sizeof count);
    const std::int64_t head = std::min(count, fit);
    if (head > 0) std::memcpy(s + sizeof count, from + at * eb, static_cast<std::size_t>(head * eb));
    if (count > fit && static_cast<int>(r) != rank_) {
      MPI_Request req;
      check(MPI_Isend_c(from + (at + fit) * eb, static_cast<MPI_Count>((count - fit) * eb), MPI_BYTE, static_cast<int>(r), kEagerTag, h.comm, &req), "MPI_Isend");
      h.requests.push_back(req);
    }
    at += count;
  }
  const int slot_bytes = static_cast<int>(slot);
  complete({"MPI_Alltoall", "MPI_Ialltoall"},
           [&] { return MPI_Alltoall(h.out_slots.data(), slot_bytes, MPI_BYTE, h.in_slots.data(), slot_bytes, MPI_BYTE, h.comm); },
           [&](MPI_Request* req) { return MPI_Ialltoall(h.out_slots.data(), slot_bytes, MPI_BYTE, h.in_slots.data(), slot_bytes, MPI_BYTE, h.comm, req); });
  recv_counts.resize(n);
  std::int64_t total = 0;
  for (std::size_t r = 0; r < n; ++r) {
    std::memcpy(&recv_counts[r], h.in_slots.data() + r * slot, sizeof(std::int64_t));
    if (recv_counts[r] < 0) throw std::logic_error("alltoallv: rank " + std::to_string(r) + " sent a negative count");
    total += recv_counts[r];
  }
  auto* to = static_cast<std::byte*>(place(total));
  at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    const std::int64_t count = recv_counts[r];
    const std::int64_t head = std::min(count, fit);
    if (head > 0) std::memcpy(to + at * eb, h.in_slots.data() + r * slot + sizeof(std::int64_t), static_cast<std::size_t>(head * eb));
    if (count > fit) {
      const std::int64_t rest = (count - fit) * eb;
      if (static_cast<int>(r) == rank_) {
        std::memcpy(to + (at + fit) * eb, from + (own_at + fit) * eb, static_cast<std::size_t>(rest));
      } else {
        MPI_Request req;
        check(MPI_Irecv_c(to + (at + fit) * eb, static_cast<MPI_Count>(rest), MPI_BYTE, static_cast<int>(r), kEagerTag, h.comm, &req), "MPI_Irecv");
        h.requests.push_back(req);
      }
    }
    at += count;
  }
  if (h.requests.empty()) return;
  const int pending = static_cast<int>(h.requests.size());
  complete({"MPI_Waitall", "MPI_Testall"}, [&] { return MPI_Waitall(pending, h.requests.data(), MPI_STATUSES_IGNORE); }, std::span<MPI_Request>(h.requests));
}

void Communicator::alltoallv_raw(const void* send, std::span<const std::int64_t> send_counts, void* recv, std::span<const std::int64_t> recv_counts,
                                 std::size_t elem_bytes) const {
  if (!handle_) {
    if (send_counts[0] != recv_counts[0]) throw std::logic_error("alltoallv: sends " + std::to_string(send_counts[0]) + " to itself, receives " + std::to_string(recv_counts[0]));
    if (send_counts[0] > 0) std::memcpy(recv, send, static_cast<std::size_t>(send_counts[0]) * elem_bytes);
    return;
  }
  // Byte counts and displacements in MPI_Count: large-count (MPI-4) so no 2^31 limit.
  const auto n = static_cast<std::size_t>(size_);
  std::vector<MPI_Count> sc(n), sd(n), rc(n), rd(n);
  MPI_Count so = 0, ro = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sc[i] = static_cast<MPI_Count>(send_counts[i]) * static_cast<MPI_Count>(elem_bytes);
    rc[i] = static_cast<MPI_Count>(recv_counts[i]) * static_cast<MPI_Count>(elem_bytes);
    sd[i] = so;
    rd[i] = ro;
    so += sc[i];
    ro += rc[i];
  }
  std::vector<MPI_Aint> sda(sd.begin(), sd.end()), rda(rd.begin(), rd.end());
  CollectiveTimer timer;
  const MPI_Comm c = handle_->comm;
  complete({"MPI_Alltoallv", "MPI_Ialltoallv"}, [&] { return MPI_Alltoallv_c(send, sc.data(), sda.data(), MPI_BYTE, recv, rc.data(), rda.data(), MPI_BYTE, c); },
           [&](MPI_Request* req) { return MPI_Ialltoallv_c(send, sc.data(), sda.data(), MPI_BYTE, recv, rc.data(), rda.data(), MPI_BYTE, c, req); });
}

void Communicator::check_all(bool ok, const std::string& message_if_not, int status) const {
  // Lowest failing rank broadcasts its message and status so every rank throws the same.
  const std::int32_t first_bad = allreduce<std::int32_t>(ok ? size_ : rank_, Op::kMin);
  if (first_bad == size_) return;
  std::int64_t head[2] = {first_bad == rank_ ? static_cast<std::int64_t>(message_if_not.size()) : 0, status};
  broadcast_raw(head, sizeof head, first_bad);
  std::string msg(static_cast<std::size_t>(head[0]), '\0');
  if (first_bad == rank_) msg = message_if_not;
  broadcast_raw(msg.data(), head[0], first_bad);
  throw CollectiveError(msg, static_cast<int>(head[1]));
}

void Communicator::abort(const std::string& message, int code) const {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  int started = 0;
  MPI_Initialized(&started);
  if (started) {
    const Watched watched("MPI_Abort", kExit, code);
    MPI_Abort(handle_ ? handle_->comm : MPI_COMM_WORLD, code);
  }
  std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

int run_guarded(const std::string& prefix, const Communicator& comm, const std::function<int()>& body) {
  try {
    return body();
  } catch (const CollectiveError& e) {
    // Every rank says so (each rank's log may be all a SLURM user reads), then exits cleanly.
    std::fprintf(stderr, "%s: error: rank %d/%d: %s\n", prefix.c_str(), comm.rank(), comm.size(), e.what());
    return e.status();
  } catch (const UsageFault& e) {  // on one rank agree passes it on as it was thrown
    if (comm.size() == 1) {
      std::fprintf(stderr, "%s: error: rank 0/1: %s\n", prefix.c_str(), e.what());
      return kUsageStatus;
    }
    comm.abort(prefix + ": error: rank " + std::to_string(comm.rank()) + ": " + e.what() + " (aborting all ranks)", kUsageStatus);
  } catch (const std::exception& e) {
    if (comm.size() == 1) {  // no peer to end: the same line and status as a CollectiveError
      std::fprintf(stderr, "%s: error: rank 0/1: %s\n", prefix.c_str(), e.what());
      return 1;
    }
    comm.abort(prefix + ": error: rank " + std::to_string(comm.rank()) + ": " + e.what() + " (aborting all ranks)");
  } catch (...) {
    comm.abort(prefix + ": error: rank " + std::to_string(comm.rank()) + ": unknown exception (aborting all ranks)");
  }
}

}  // namespace shardgnn::comm
