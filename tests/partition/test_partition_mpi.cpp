// Partitioning spread over the ranks (ctest runs this file under mpiexec at 1, 2 and 4 ranks)
// against the serial path: metis-ml over P ranks gives every rank the same assignment, within the
// balance limits and near the serial cut (the serial result itself at one rank); shards written by
// P ranks are byte for byte those the serial writer makes of the same assignment, and verify.
// Only CHECK (never REQUIRE) between collectives: a failing rank must keep entering them.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "datasets/readers.hpp"
#include "partition/methods.hpp"
#include "partition/metrics.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "test_paths.hpp"
#include "comm/communicator.hpp"

using namespace shardgnn;
namespace fs = std::filesystem;

namespace {

// A folder every rank sees: rank 0 makes it, the others learn its name.
struct SharedDir {
  const comm::Communicator& world;
  std::string path;
  explicit SharedDir(const comm::Communicator& w) : world(w) {
    if (world.rank() == 0) {
      path = (fs::temp_directory_path() / ("shardgnn-mpi-partition-" + std::to_string(::getpid()))).string();
      fs::remove_all(path);
      fs::create_directories(path);
    }
    std::int64_t len = static_cast<std::int64_t>(path.size());
    world.broadcast(std::span<std::int64_t>(&len, 1), 0);
    path.resize(static_cast<std::size_t>(len));
    world.broadcast(std::span<char>(path.data(), path.size()), 0);
  }
  ~SharedDir() {
    world.barrier();
    if (world.rank() == 0) fs::remove_all(path);
  }
};

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("metis-ml over the ranks: one assignment on every rank, balanced, near the serial cut, shards written by the ranks equal the serial writer's", "[partition][mpi]") {
  auto world = comm::Communicator::world();
  const comm::Communicator& coll = world;
  const SharedDir dir(world);
  struct Case {
    std::string sample;
    bool clean;
    std::vector<BalanceKey> balance;
  };
  for (const Case& c : {Case{"4elt.graph", false, {BalanceKey::kNodes}}, Case{"cora.npz", false, {BalanceKey::kNodes, BalanceKey::kEdges, BalanceKey::kTrain}},
                        Case{"soc-Slashdot0902.txt.gz", true, {BalanceKey::kNodes, BalanceKey::kEdges}}}) {
    INFO(c.sample << " on " << world.size() << " ranks");
    const std::string ddir = dir.path + "/" + fs::path(c.sample).stem().string();
    if (world.rank() == 0) {
      ReadOptions ro;
      ro.clean.symmetrize = c.clean;
      save_dataset(read_dataset(test::sample(c.sample), ro), ddir);
    }
    world.barrier();
    const Dataset ds = load_dataset(ddir);
    PartitionConfig cfg;
    cfg.method = PartitionMethod::kMetisMl;
    cfg.parts = 4;
    cfg.balance = c.balance;
    cfg.coarse_nodes = 300;  // small graphs: force several levels
    // The spread algorithm itself (partition() takes the serial path for one rank).
    const std::vector<PartId> spread = metis_ml_partition(ds, cfg, coll);
    CHECK(make_partitioner(cfg.method)->partition(ds, cfg, coll).size() == spread.size());
    const std::vector<PartId> serial = make_partitioner(cfg.method)->partition(ds, cfg);
    // Every rank holds the same assignment.
    std::uint64_t digest = 0;
    for (std::size_t v = 0; v < spread.size(); ++v) digest = digest * 31 + static_cast<std::uint64_t>(spread[v]) + 1;
    const std::vector<std::uint64_t> digests = world.allgather(digest);
    CHECK(std::all_of(digests.begin(), digests.end(), [&](std::uint64_t d) { return d == digests[0]; }));
    if (world.size() == 1) CHECK(spread == serial);
    PartitionConfig measure = cfg;
    const PartitionMetrics ms = compute_metrics(ds, spread, measure), m1 = compute_metrics(ds, serial, measure);
    INFO("cut over the ranks " << ms.edge_cut << ", serial " << m1.edge_cut);
    CHECK(ms.nodes.ratio() <= 1.0 + cfg.imbalance + 1e-9);
    // Each rank's clusters stay in its node range, so more ranks coarsen less far: the bound
    // leaves room for the mesh, label propagation's weak case.
    CHECK(static_cast<double>(ms.edge_cut) <= 1.3 * static_cast<double>(m1.edge_cut));

    PartitionResult r;
    r.config = cfg;
    r.assignment = spread;
    if (world.rank() == 0) CHECK_NOTHROW(write_partitioned(ds, ddir, r, ddir + "-serial", {}));
    write_partitioned(ds, ddir, r, ddir + "-spread", {.comm = &coll});
    if (world.rank() == 0) {
      const ValidationResult v = verify_partition(ddir, ddir + "-spread");
      INFO((v.errors.empty() ? "" : v.errors[0]));
      CHECK(v.ok());
      const PartitionInfo a = load_partition_info(ddir + "-serial"), b = load_partition_info(ddir + "-spread");
      CHECK(boost::json::value_from(a.parts) == boost::json::value_from(b.parts));  // listings with every file's checksum
      CHECK(a.metrics_as_written == b.metrics_as_written);
      for (PartId k = 0; k < cfg.parts; ++k)
        for (const char* name : {"indices.npy", "features.npy", "halo_nodes.npy"})
          CHECK(bytes_of(fs::path(ddir + "-serial") / ("part-" + std::to_string(k)) / name) == bytes_of(fs::path(ddir + "-spread") / ("part-" + std::to_string(k)) / name));
    }
    // An existing folder is refused on every rank, and nothing is left beside it.
    CHECK_THROWS_WITH(write_partitioned(ds, ddir, r, ddir + "-spread", {.comm = &coll}), Catch::Contains("output folder exists"));
    world.barrier();
    if (world.rank() == 0) {
      std::int64_t entries = 0;
      for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++entries;
      CHECK(entries == 3);  // the dataset, -serial and -spread
    }
    world.barrier();
    if (world.rank() == 0) {
      fs::remove_all(ddir + "-serial");
      fs::remove_all(ddir + "-spread");
      fs::remove_all(ddir);
    }
    world.barrier();
  }
}
