// The MPI layer's chunked point-to-point exchange at 1, 2 and 4 ranks (run under mpiexec with the
// sampler tests). Only CHECK after the first message: a failing rank must keep communicating.
#include <catch2/catch.hpp>
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"

using namespace shardgnn;

namespace {

// The items rank `from` sends rank `to`: uneven; none for some pairs of ranks (1 -> 0 at 2
// ranks; 1 -> 0, 2 -> 1, 0 -> 2 ... at 4), and some to itself (every rank).
std::int64_t items_between(int from, int to) { return (2 * from + to) % 3 == 2 ? 0 : (from * 11 + to * 5) % 9 + 1; }

// An item names its sender, its receiver and its index in that pair's block.
using Item = std::array<std::int32_t, 3>;

}  // namespace

TEST_CASE("exchange_chunked delivers every item once, produced before it travels and consumed after it lands", "[comm][mpi]") {
  const auto world = comm::Communicator::world();
  const int P = world.size(), me = world.rank();
  const comm::WaitMode before = comm::wait_mode();
  for (comm::WaitMode mode : {comm::WaitMode::kSpin, comm::WaitMode::kYield})  // every rank alike
  for (std::int64_t chunk : {std::int64_t{1}, std::int64_t{2}, std::int64_t{1000}}) {
    comm::set_wait_mode(mode);
    std::vector<std::int64_t> send_counts(static_cast<std::size_t>(P)), recv_counts(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) {
      send_counts[static_cast<std::size_t>(r)] = items_between(me, r);
      recv_counts[static_cast<std::size_t>(r)] = items_between(r, me);
    }
    std::int64_t out_total = 0, in_total = 0;
    for (int r = 0; r < P; ++r) {
      out_total += send_counts[static_cast<std::size_t>(r)];
      in_total += recv_counts[static_cast<std::size_t>(r)];
    }
    // Sentinels: an item sent before produce wrote it arrives as {-1, -1, -1}.
    std::vector<Item> send(static_cast<std::size_t>(out_total), Item{-1, -1, -1}), recv(static_cast<std::size_t>(in_total), Item{-2, -2, -2});
    std::vector<int> produced(send.size(), 0), consumed(recv.size(), 0);
    std::int64_t wrong_at_consume = 0, bad_chunk = 0;
    auto block_of = [&](const std::vector<std::int64_t>& counts, std::int64_t item) {  // (rank, index in its block)
      int r = 0;
      while (item >= counts[static_cast<std::size_t>(r)]) item -= counts[static_cast<std::size_t>(r++)];
      return std::pair<int, std::int64_t>{r, item};
    };
    world.exchange_chunked(
        send_counts, send.data(), recv_counts, recv.data(), sizeof(Item), chunk,
        [&](std::int64_t first, std::int64_t count) {
          bad_chunk += count < 1 || count > chunk;
          for (std::int64_t i = first; i < first + count; ++i) {
            const auto [to, k] = block_of(send_counts, i);
            send[static_cast<std::size_t>(i)] = Item{me, to, static_cast<std::int32_t>(k)};
            ++produced[static_cast<std::size_t>(i)];
          }
        },
        [&](std::int64_t first, std::int64_t count) {
          bad_chunk += count < 1 || count > chunk;
          for (std::int64_t i = first; i < first + count; ++i) {
            const auto [from, k] = block_of(recv_counts, i);
            wrong_at_consume += recv[static_cast<std::size_t>(i)] != Item{from, me, static_cast<std::int32_t>(k)};
            ++consumed[static_cast<std::size_t>(i)];
          }
        });
    INFO("chunk " << chunk << ", wait mode " << (mode == comm::WaitMode::kYield ? "yield" : "spin") << ", rank " << me);
    CHECK(bad_chunk == 0);
    CHECK(wrong_at_consume == 0);
    CHECK(std::count(produced.begin(), produced.end(), 1) == out_total);
    CHECK(std::count(consumed.begin(), consumed.end(), 1) == in_total);
    // Calls back to back: a later call's chunks never meet an earlier call's receives.
    std::vector<std::int32_t> a(static_cast<std::size_t>(in_total), -1), b(static_cast<std::size_t>(in_total), -1);
    std::vector<std::int32_t> sa(static_cast<std::size_t>(out_total), 1), sb(static_cast<std::size_t>(out_total), 2);
    world.exchange_chunked(send_counts, sa.data(), recv_counts, a.data(), sizeof(std::int32_t), chunk, [](std::int64_t, std::int64_t) {}, [](std::int64_t, std::int64_t) {});
    world.exchange_chunked(send_counts, sb.data(), recv_counts, b.data(), sizeof(std::int32_t), chunk, [](std::int64_t, std::int64_t) {}, [](std::int64_t, std::int64_t) {});
    CHECK(std::count(a.begin(), a.end(), 1) == in_total);
    CHECK(std::count(b.begin(), b.end(), 2) == in_total);
  }
  comm::set_wait_mode(before);
  // Counts for another rank count, or chunks of no items, are the caller's bug: thrown before any message.
  const std::vector<std::int64_t> wrong(static_cast<std::size_t>(P) + 1, 0), none(static_cast<std::size_t>(P), 0);
  auto nothing = [](std::int64_t, std::int64_t) {};
  CHECK_THROWS_AS(world.exchange_chunked(wrong, nullptr, none, nullptr, 4, 1, nothing, nothing), std::logic_error);
  CHECK_THROWS_AS(world.exchange_chunked(none, nullptr, none, nullptr, 4, 0, nothing, nothing), std::logic_error);
}
