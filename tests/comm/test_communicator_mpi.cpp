// The typed collectives under mpiexec at 1, 2 and 4 ranks: alltoallv, whose payloads travel either
// as counts then data or eagerly (count and first bytes in one slot, the rest point-to-point), must
// deliver exactly what every rank sent, whatever the sizes, element type and wait mode.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace {

using shardgnn::comm::AlltoallvResult;
using shardgnn::comm::Communicator;
using shardgnn::comm::EagerSetting;
using shardgnn::comm::WaitMode;

// Sets the exchange (and the wait mode) on every rank for one test, and puts both back after.
class Setting {
 public:
  Setting(EagerSetting eager, WaitMode wait) : eager_(shardgnn::comm::eager_setting()), wait_(shardgnn::comm::wait_mode()) {
    shardgnn::comm::set_eager(eager);
    shardgnn::comm::set_wait_mode(wait);
  }
  ~Setting() {
    shardgnn::comm::set_eager(eager_);
    shardgnn::comm::set_wait_mode(wait_);
  }

 private:
  EagerSetting eager_;
  WaitMode wait_;
};

// Twelve bytes, so that neither the slot nor the payload is a multiple of 8.
struct Triple {
  std::int32_t a, b, c;
  bool operator==(const Triple&) const = default;
};

std::int64_t value(int from, int to, std::int64_t i, int round) { return (static_cast<std::int64_t>(from) << 40) ^ (static_cast<std::int64_t>(to) << 32) ^ (i * 7919 + round); }
template <class T> T element(int from, int to, std::int64_t i, int round);
template <> std::int64_t element(int from, int to, std::int64_t i, int round) { return value(from, to, i, round); }
template <> std::uint8_t element(int from, int to, std::int64_t i, int round) { return static_cast<std::uint8_t>(value(from, to, i, round) * 31 >> 3); }
template <> Triple element(int from, int to, std::int64_t i, int round) {
  const std::int64_t v = value(from, to, i, round);
  return {static_cast<std::int32_t>(v), static_cast<std::int32_t>(v >> 32), static_cast<std::int32_t>(i)};
}

// How many elements rank `from` sends rank `to` in `round`: every rank computes the same table.
// Sizes around every slot boundary (empty, one element, about a slot, a slot and one more) and
// some far larger than any slot.
std::int64_t count(int from, int to, int round) {
  static constexpr std::array<std::int64_t, 12> kSizes = {0, 1, 2, 7, 8, 9, 63, 64, 65, 127, 1000, 50000};
  std::mt19937_64 rng(static_cast<std::uint64_t>(from * 1009 + to * 17 + round * 100003));
  return kSizes[rng() % kSizes.size()];
}

// One exchange of round `round`, checked against what every sender must have sent. Returns the
// first difference on this rank ("" if none); callers agree on it across ranks before failing, so
// a rank that fails never leaves the others in the next exchange.
template <class T>
std::string exchange_and_check(const Communicator& world, int round) {
  const int P = world.size(), me = world.rank();
  std::vector<T> send;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(P));
  for (int to = 0; to < P; ++to) {
    counts[static_cast<std::size_t>(to)] = count(me, to, round);
    for (std::int64_t i = 0; i < counts[static_cast<std::size_t>(to)]; ++i) send.push_back(element<T>(me, to, i, round));
  }
  const AlltoallvResult<T> got = world.alltoallv<T>(send, counts);
  const std::string where = "rank " + std::to_string(me) + ", round " + std::to_string(round) + ", " + std::to_string(sizeof(T)) + "-byte elements: ";
  if (got.counts.size() != static_cast<std::size_t>(P) || got.displs.size() != static_cast<std::size_t>(P)) return where + "counts or displacements not one per rank";
  std::int64_t at = 0;
  for (int from = 0; from < P; ++from) {
    const std::int64_t n = count(from, me, round);
    const std::string block_of = where + "from rank " + std::to_string(from) + ": ";
    if (got.counts[static_cast<std::size_t>(from)] != n) return block_of + std::to_string(got.counts[static_cast<std::size_t>(from)]) + " elements, sent " + std::to_string(n);
    if (got.displs[static_cast<std::size_t>(from)] != at) return block_of + "displacement " + std::to_string(got.displs[static_cast<std::size_t>(from)]) + ", expected " + std::to_string(at);
    const std::span<const T> block = got.from(from);
    for (std::int64_t i = 0; i < n; ++i)
      if (!(block[static_cast<std::size_t>(i)] == element<T>(from, me, i, round))) return block_of + "element " + std::to_string(i) + " of " + std::to_string(n) + " differs";
    at += n;
  }
  if (got.data.size() != static_cast<std::size_t>(at)) return where + std::to_string(got.data.size()) + " elements in all, expected " + std::to_string(at);
  return "";
}

// Fails on every rank when the check failed on any (each rank reports its own difference).
void require_everywhere(const Communicator& world, const std::string& error) {
  const bool all_ok = world.all(error.empty());
  INFO(error);
  REQUIRE(all_ok);
}

}  // namespace

TEST_CASE("alltoallv delivers exactly what each rank sent, eager or not, at every payload size, type and wait mode", "[comm][mpi]") {
  const Communicator world = Communicator::world();
  // off: counts, then data; 0: every payload point-to-point; 8 and 24: small slots that most
  // payloads overflow (24 is not a multiple of 12); 1000 and auto: most fit.
  const std::array<EagerSetting, 6> settings = {EagerSetting{EagerSetting::kOff}, EagerSetting{0}, EagerSetting{8}, EagerSetting{24}, EagerSetting{1000},
                                                EagerSetting{EagerSetting::kAuto}};
  for (const WaitMode wait : {WaitMode::kSpin, WaitMode::kYield}) {
    for (const EagerSetting eager : settings) {
      INFO("eager inline bytes " << eager.inline_bytes << (wait == WaitMode::kYield ? ", yielding" : ", spinning"));
      const Setting setting(eager, wait);
      // Many exchanges back to back, with no barrier between: point-to-point remainders of one
      // exchange must never be taken for the next one's.
      for (int round = 0; round < 12; ++round) {
        require_everywhere(world, exchange_and_check<std::int64_t>(world, round));
        require_everywhere(world, exchange_and_check<std::uint8_t>(world, round));
        require_everywhere(world, exchange_and_check<Triple>(world, round));
      }
    }
  }
}

TEST_CASE("allgatherv, built on alltoallv, gives every rank every rank's array in rank order, eager or not", "[comm][mpi]") {
  const Communicator world = Communicator::world();
  for (const EagerSetting eager : {EagerSetting{EagerSetting::kOff}, EagerSetting{16}, EagerSetting{EagerSetting::kAuto}}) {
    const Setting setting(eager, WaitMode::kSpin);
    std::vector<std::int64_t> mine(static_cast<std::size_t>(world.rank() * 5 + 1));
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = world.rank() * 1000 + static_cast<std::int64_t>(i);
    const auto all = world.allgatherv<std::int64_t>(mine);
    std::vector<std::int64_t> want;
    for (int r = 0; r < world.size(); ++r)
      for (int i = 0; i < r * 5 + 1; ++i) want.push_back(r * 1000 + i);
    require_everywhere(world, all.data == want ? "" : "rank " + std::to_string(world.rank()) + ": allgatherv differs");
  }
}

TEST_CASE("SHARDGNN_EAGER_BYTES: auto, off or a byte count, auto's slot shrinks with the rank count", "[comm]") {
  using shardgnn::comm::eager_inline_bytes;
  using shardgnn::comm::parse_eager;
  CHECK(parse_eager("").inline_bytes == EagerSetting::kAuto);
  CHECK(parse_eager("auto").inline_bytes == EagerSetting::kAuto);
  CHECK(parse_eager("off").inline_bytes == EagerSetting::kOff);
  CHECK(parse_eager("0").inline_bytes == 0);
  CHECK(parse_eager("4096").inline_bytes == 4096);
  CHECK(parse_eager("1048576").inline_bytes == 1048576);
  for (const char* bad : {"1048577", "-1", "12x", "1k", "x", " 5", "on"}) CHECK_THROWS_AS(parse_eager(bad), std::invalid_argument);
  CHECK(eager_inline_bytes(EagerSetting{EagerSetting::kOff}, 2) == -1);
  CHECK(eager_inline_bytes(EagerSetting{300}, 4096) == 300);
  // Auto: a 1 KiB slot (8 bytes of it the count) up to 64 ranks, 64 KiB of slots a rank above,
  // never under 64 bytes.
  CHECK(eager_inline_bytes(EagerSetting{EagerSetting::kAuto}, 1) == 1016);
  CHECK(eager_inline_bytes(EagerSetting{EagerSetting::kAuto}, 64) == 1016);
  CHECK(eager_inline_bytes(EagerSetting{EagerSetting::kAuto}, 128) == 504);
  CHECK(eager_inline_bytes(EagerSetting{EagerSetting::kAuto}, 1024) == 56);
  CHECK(eager_inline_bytes(EagerSetting{EagerSetting::kAuto}, 100000) == 56);
}

TEST_CASE("--collective-timeout: seconds >= 0 (0: no deadline), anything else names the option", "[comm]") {
  using shardgnn::comm::parse_collective_timeout;
  CHECK(parse_collective_timeout("600") == 600);
  CHECK(parse_collective_timeout("0.5") == 0.5);
  CHECK(parse_collective_timeout("0") == 0);
  for (const char* bad : {"-1", "x", "", "1s", "nan", "inf", "5 "}) CHECK_THROWS_WITH(parse_collective_timeout(bad), Catch::Contains("--collective-timeout"));
  const double before = shardgnn::comm::collective_timeout();
  shardgnn::comm::set_collective_timeout(-3);  // below zero: off, as 0
  CHECK(shardgnn::comm::collective_timeout() == 0);
  shardgnn::comm::set_collective_timeout(before);
}
