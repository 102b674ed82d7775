// `mpiexec -n P shardgnn bench sampler <parts-dir> --fanouts 15,10,5 --batch 1024` (in the program
// shardgnn-bench, which the dispatcher execs): the distributed sampler and feature store, with the physical limits measured in the same run: a
// plain memcpy random-row gather (the local-gather limit) and a raw MPI alltoallv replaying the
// exact byte pattern of the feature exchanges (the remote-fetch limit); optionally DGL's CPU
// neighbour sampler on the same graph, fanouts and batch size.
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>

#include "comm/communicator.hpp"
#include "datasets/stopwatch.hpp"
#include "datasets/error.hpp"
#include "datasets/json_util.hpp"
#include "partition/shards.hpp"
#include "sampler/feature_store.hpp"
#include "sampler/pipeline.hpp"
#include "sampler/sampler.hpp"
#include "sampler/shard_view.hpp"
#include "bench/bench.hpp"
#include "bench/process.hpp"
#include "tools/cli.hpp"
#include "tools/mpi_program.hpp"
#include "tools/sampler_options.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {


// The command line, bound into plain values that the steps below read.
struct BenchOptions {
  SamplerConfig cfg;
  int epochs = 1;
  std::int64_t max_steps = 0;
  std::string dir;
  std::optional<std::string> dgl_python, json;
};

// Parses and validates on every rank, so that all of them stop on the same error; nullopt after --help.
std::optional<BenchOptions> parse_options(const std::vector<std::string>& args, const comm::Communicator& world) {
  BenchOptions opts;
  SamplerConfig& cfg = opts.cfg;
  cfg.prefetch = 0;  // one batch at a time, so each phase's time is its own
  po::options_description o("options");
  add_sampler_options(o, cfg);
  add_collective_timeout_option(o);
  o.add_options()
      ("epochs", bound(opts.epochs), "epochs to time")
      ("max-steps", bound(opts.max_steps), "stop each epoch after this many steps (0 = whole epoch)")
      ("seed", bound(cfg.seed), "seed")
      ("dgl-python", po::value<std::string>(), "a python with DGL (scripts/peers.sh makes one): run DGL's sampler on the same graph")
      ("json", po::value<std::string>(), "also write the results as JSON here (rank 0)");
  po::variables_map vm;
  bool help = false;
  comm::agree(world, [&] { help = !parse(args, "mpiexec -n P shardgnn bench sampler <partitioned-dir> [--fanouts 15,10,5] [--batch 1024] [options]", o, {"dir"}, vm); });
  if (help) return std::nullopt;
  comm::agree(world, [&] {
    validate(cfg);
    if (opts.epochs < 1) throw InputError("--epochs must be at least 1");
  });
  opts.dir = vm["dir"].as<std::string>();
  if (vm.count("dgl-python")) opts.dgl_python = vm["dgl-python"].as<std::string>();
  if (vm.count("json")) opts.json = vm["json"].as<std::string>();
  return opts;
}

// Loads this rank's shard, turning any failure into an error every rank reports.
Shard load_rank_shard(const comm::Communicator& world, const std::string& dir, PartitionInfo& info) {
  Shard shard;
  comm::agree(world, [&] {
    info = load_partition_info(dir);
    shard = load_shard_for_rank(info, world.rank(), world.size());
  });
  return shard;
}

std::size_t row_bytes_of(const Shard& shard) { return shard.feature_row_bytes(); }

// Every feature reply's per-rank float counts, one entry per exchange, for the raw-MPI replay.
// Node-local reads are logged as `received` only (floats read from each rank's shard); the
// owners' `sent` is learned later.
struct ReplyCounts {
  std::vector<std::int64_t> sent, received;
  bool node_local = false;
};

// What the sampler's and the store's observers record during the timed run.
struct RunLog {
  double sample_skew_s = 0, fetch_skew_s = 0;
  std::vector<ReplyCounts> replies;
};

// Hooks `log` into the sampler and the store; the hooks hold references to `log` and `comm`.
void watch_run(RunLog& log, DistSampler& sampler, FeatureStore& store, const comm::Communicator& comm, int ranks) {
  // With more than one rank, a timed barrier before each batch and before each fetch's exchange,
  // so that waiting for a rank still busy with its previous step counts as skew, not as sampling
  // or fetch time.
  auto timed_barrier = [&comm](double& waited) {
    return [&comm, &waited] {
      const auto t0 = Clock::now();
      comm.barrier();
      waited += since(t0);
    };
  };
  FeatureStore::Observer watch_fetch;
  watch_fetch.node_local_read = [&log](std::span<const std::int64_t> floats) { log.replies.push_back({{}, {floats.begin(), floats.end()}, true}); };
  watch_fetch.rows_exchanged = [&log](std::span<const std::int64_t> sent, std::span<const std::int64_t> received) {
    log.replies.push_back({{sent.begin(), sent.end()}, {received.begin(), received.end()}, false});
  };
  if (ranks > 1) {
    watch_fetch.before_exchange = timed_barrier(log.fetch_skew_s);
    sampler.observe({timed_barrier(log.sample_skew_s)});
  }
  store.observe(std::move(watch_fetch));
}

// Limit 1, measured beside the run: after each epoch, every rank at once, for each of the
// epoch's batches a plain memcpy gather of as many uniformly random rows of this rank's shard as
// that batch's local gather copied, from the same mapped file into a buffer already faulted in.
// Both thus run under the same load from the rest of the machine (a separate measurement after
// the run drifted with the machine's other load) and beside the same work on the other ranks.
// Not after each batch: its reads left the next batch's sampling a colder cache.
class MemcpyBaseline {
 public:
  explicit MemcpyBaseline(const Shard& shard)
      : shard_(shard), row_bytes_(row_bytes_of(shard)), enabled_(shard.feature_dim > 0 && shard.graph.num_nodes() > 0) {
    if (!enabled_) return;
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<std::int64_t> pick(0, shard.graph.num_nodes() - 1);
    idx_.resize(std::size_t{1} << 20);
    for (auto& i : idx_) i = pick(rng);
  }

  // One gather per batch, of as many rows as that batch gathered locally; none without features.
  void gather_like(const std::vector<std::int64_t>& batch_local_rows) {
    if (enabled_)
      for (std::int64_t rows : batch_local_rows) gather(rows);
  }

  double gbs() const { return seconds_ > 0 ? static_cast<double>(rows_) * static_cast<double>(row_bytes_) / seconds_ / 1e9 : 0; }

 private:
  void gather(std::int64_t rows) {
    const auto F = static_cast<std::size_t>(shard_.feature_dim);
    if (out_.size() < static_cast<std::size_t>(rows) * F) out_.resize(static_cast<std::size_t>(rows) * F, 0.0f);  // zero-filled: faulted in
    const auto t0 = Clock::now();
    for (std::int64_t k = 0; k < rows; ++k) {
      std::memcpy(out_.data() + static_cast<std::size_t>(k) * F, shard_.feature_row(idx_[next_]), row_bytes_);
      next_ = (next_ + 1) % idx_.size();
    }
    seconds_ += since(t0);
    rows_ += rows;
  }

  const Shard& shard_;
  std::size_t row_bytes_;
  bool enabled_;
  std::vector<std::int64_t> idx_;
  FeatureRows out_;  // in the same 2 MiB pages as a batch's (FeatureRows' pool): like for like
  std::size_t next_ = 0;
  double seconds_ = 0;
  std::int64_t rows_ = 0;
};

struct EpochsRun {
  std::int64_t steps = 0, input_nodes = 0;
  double wall_s = 0;  // the run's own time, without the baseline measured beside it
};

// Timed epochs, one batch at a time (no prefetch thread) so each phase's time is its own.
EpochsRun run_epochs(const comm::Communicator& world, DistSampler& sampler, FeatureStore& store, MemcpyBaseline& baseline, int epochs,
                     std::int64_t max_steps) {
  EpochsRun run;
  double beside_s = 0;  // the baseline's gathers and the barriers around them
  const auto t_all = Clock::now();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::int64_t steps = sampler.steps_in_epoch(epoch);
    if (max_steps > 0) steps = std::min(steps, max_steps);
    std::vector<std::int64_t> batch_local_rows;
    {
      Prefetcher pipe(sampler, store, epoch, steps, 0);
      std::int64_t local_before = store.counters().local_rows;
      while (auto mb = pipe.next()) {
        ++run.steps;
        run.input_nodes += static_cast<std::int64_t>(mb->input_nodes().size());
        const std::int64_t local_now = store.counters().local_rows;
        batch_local_rows.push_back(local_now - local_before);
        local_before = local_now;
      }
    }
    // On every rank, shard or none: all start and resume together, so no rank's baseline is
    // another's wait.
    const auto tb = Clock::now();
    world.barrier();
    baseline.gather_like(batch_local_rows);
    world.barrier();
    beside_s += since(tb);
  }
  run.wall_s = since(t_all) - beside_s;
  return run;
}

struct RawReplay {
  double remote_s = 0, node_local_s = 0;
};

// Limit 2: one raw MPI_Alltoallv per batch replaying the feature replies' exact counts (same
// bytes, same peers; no request round, no count exchange, no gather, no skew between ranks).
// Rows read from node-local shards are replayed likewise, as if they had been exchanged: each
// owner learns first (untimed) how many floats every rank read from it.
// Remote replies' values are `wire_bytes` each (the rows' type on the wire), node-local ones
// `stored_bytes` (the shards' feature dtype).
RawReplay replay_raw_alltoallv(const comm::Communicator& world, const comm::Communicator& comm, std::vector<ReplyCounts>& replies, std::size_t wire_bytes,
                               std::size_t stored_bytes) {
  const std::vector<std::int64_t> one_each(static_cast<std::size_t>(world.size()), 1);
  for (auto& counts : replies)
    if (counts.node_local) counts.sent = comm.alltoallv<std::int64_t>(counts.received, one_each).data;
  world.barrier();
  RawReplay raw;
  std::vector<std::byte> buf, got;
  std::vector<std::int64_t> sent, received;
  for (const auto& counts : replies) {
    const auto bytes = static_cast<std::int64_t>(counts.node_local ? stored_bytes : wire_bytes);
    sent.clear();
    received.clear();
    for (auto c : counts.sent) sent.push_back(c * bytes);
    for (auto c : counts.received) received.push_back(c * bytes);
    buf.resize(static_cast<std::size_t>(std::accumulate(sent.begin(), sent.end(), std::int64_t{0})));
    got.resize(static_cast<std::size_t>(std::accumulate(received.begin(), received.end(), std::int64_t{0})));
    const auto t0 = Clock::now();
    comm.alltoallv_into<std::byte>(buf, sent, received, got);
    (counts.node_local ? raw.node_local_s : raw.remote_s) += since(t0);
  }
  return raw;
}

// One rank's figures, all doubles so that the ranks allgather them as one plain struct.
struct Row {
  double sampled_edges, sample_s, exchange_s, fetch_local_s, fetch_cache_s, fetch_remote_s, fetch_exchange_s, skew_s, remote_bytes, remote_rows, hits, input_nodes, steps, raw_s, local_gbs, memcpy_gbs, wall;
  double rows_by_owners, sampling_bytes, sample_skew_s, own_rows, served_rows;
  double id_exchange_s, gather_s, row_exchange_s, scatter_s;
  double node_local_rows, node_local_s, raw_node_local_s, node_local_sampled, node_local_peers;
};

// What this rank measured, for the allgather.
struct RankMeasures {
  SamplerCounters sampler;
  FeatureCounters features;
  RunLog log;
  EpochsRun run;
  RawReplay raw;
  double memcpy_gbs = 0;
  std::size_t row_bytes = 0, wire_row_bytes = 0;  // a feature row as stored, and on the wire
  int node_local_peers = 0;
};

Row rank_row(const RankMeasures& m) {
  const SamplerCounters& sc = m.sampler;
  const FeatureCounters& fc = m.features;
  const double local_gbs = fc.local_gather_s > 0 ? static_cast<double>(fc.local_rows) * static_cast<double>(m.row_bytes) / fc.local_gather_s / 1e9 : 0;
  const double remote_bytes = static_cast<double>(fc.remote_rows - fc.cache_hits) * static_cast<double>(m.wire_row_bytes);
  return Row{static_cast<double>(sc.sampled_edges), sc.sample_s, sc.exchange_s, fc.local_gather_s, fc.cache_s, fc.remote_s, fc.exchange_s, m.log.fetch_skew_s, remote_bytes,
             static_cast<double>(fc.remote_rows), static_cast<double>(fc.cache_hits), static_cast<double>(m.run.input_nodes), static_cast<double>(m.run.steps),
             m.raw.remote_s, local_gbs, m.memcpy_gbs, m.run.wall_s,
             static_cast<double>(sc.remote_rows_sampled), static_cast<double>(sc.bytes_sent), m.log.sample_skew_s,
             static_cast<double>(sc.local_rows_sampled), static_cast<double>(sc.rows_served),
             fc.id_exchange_s, fc.gather_s, fc.row_exchange_s, fc.scatter_s,
             static_cast<double>(fc.node_local_rows), fc.node_local_s, m.raw.node_local_s, static_cast<double>(sc.node_local_rows_sampled),
             static_cast<double>(m.node_local_peers)};
}

// The ranks' rows reduced to the figures the report prints.
struct Summary {
  Row sum{};  // totals over the ranks, but means of the rates and of the node-local peers
  double ranks = 0, max_wall = 0, edges_per_core_s = 0, remote_gbs = 0, raw_gbs = 0, hit = 0;
};

Summary summarize(const std::vector<Row>& all) {
  Summary s;
  Row& sum = s.sum;
  auto add_up = [&](auto... field) {
    for (const Row& r : all) ((sum.*field += r.*field), ...);
  };
  add_up(&Row::sampled_edges, &Row::sample_s, &Row::exchange_s, &Row::fetch_local_s, &Row::fetch_cache_s, &Row::fetch_remote_s, &Row::fetch_exchange_s,
        &Row::skew_s, &Row::remote_bytes, &Row::remote_rows, &Row::hits, &Row::input_nodes, &Row::steps, &Row::raw_s, &Row::rows_by_owners,
        &Row::sampling_bytes, &Row::sample_skew_s, &Row::id_exchange_s, &Row::gather_s, &Row::row_exchange_s, &Row::scatter_s, &Row::node_local_rows,
        &Row::node_local_s, &Row::raw_node_local_s, &Row::local_gbs, &Row::memcpy_gbs, &Row::node_local_peers);
  s.ranks = static_cast<double>(all.size());
  for (double Row::*mean : {&Row::local_gbs, &Row::memcpy_gbs, &Row::node_local_peers}) sum.*mean /= s.ranks;
  for (const Row& r : all) s.max_wall = std::max(s.max_wall, r.wall);
  s.edges_per_core_s = sum.sampled_edges / (sum.sample_s + sum.exchange_s);
  s.remote_gbs = sum.fetch_remote_s > 0 ? sum.remote_bytes / sum.fetch_remote_s / 1e9 : 0;
  s.raw_gbs = sum.raw_s > 0 ? sum.remote_bytes / sum.raw_s / 1e9 : 0;
  s.hit = sum.remote_rows > 0 ? sum.hits / sum.remote_rows : 0;
  return s;
}

// The run's setting, as the report's header names it.
struct RunSetting {
  const PartitionInfo& info;
  const SamplerConfig& cfg;
  int ranks = 0;
  double cache_s = 0;  // shards mapped in and cache built
  std::size_t row_bytes = 0;
  std::string wire;    // what rows travel as (FeatureStore::wire_name: 2-byte shards' rows as stored)
};

// The header, the sampling lines and the per-rank sampling load.
void print_sampling(const RunSetting& run, const std::vector<Row>& all, const Summary& s) {
  const Row& sum = s.sum;
  std::printf("%s\n", machine_description().c_str());
  std::printf("dataset %s, %d ranks, fanouts %s, batch %d, %s, cache %s (%.0f%% of remote rows), rows on the wire as %s, %.0f steps per rank\n",
              run.info.dataset.name.c_str(), run.ranks, fanouts_text(run.cfg.fanouts).c_str(), run.cfg.batch_size,
              run.cfg.replace ? "with replacement" : "without replacement", cache_policy_name(run.cfg.cache_policy).c_str(), 100 * run.cfg.cache_fraction,
              run.wire.c_str(), sum.steps / s.ranks);
  const std::int64_t eager = comm::eager_inline_bytes(comm::eager_setting(), run.ranks);
  if (eager >= 0) std::printf("exchanges                  eager: counts and up to %lld bytes per peer in one round (SHARDGNN_EAGER_BYTES)\n", static_cast<long long>(eager));
  else std::printf("exchanges                  counts, then data: two rounds (SHARDGNN_EAGER_BYTES=off)\n");
  std::printf("sampled edges / s / core   %.3g   (%.0f edges per batch)\n", s.edges_per_core_s, sum.sampled_edges / sum.steps);
  std::printf("input nodes per batch      %.0f\n", sum.input_nodes / sum.steps);
  if (all.size() > 1) {
    // The exchanges' time is mostly waiting for the busiest rank, not moving their bytes.
    std::printf("sampled by owners          %.0f rows per batch, %.3g bytes sent per batch (requests and replies, all hops)\n", sum.rows_by_owners / sum.steps,
                sum.sampling_bytes / sum.steps);
    // Over MPI, each rank samples the rows of the nodes it owns for every rank's batches: its load
    // follows the edges it owns, and the other ranks wait for the busiest one inside each hop.
    // Rows of node-local ranks are drawn by the rank whose batch needs them, from their shards.
    std::printf("rows sampled per rank      ");
    for (std::size_t r = 0; r < all.size(); ++r)
      std::printf("%s%zu: %.0f own + %.0f from same-node shards + %.0f for others in %.2f s (exchanges %.2f s)", r ? "; " : "", r, all[r].own_rows,
                  all[r].node_local_sampled, all[r].served_rows, all[r].sample_s,
                  all[r].exchange_s);
    std::printf("\n");
  }
}

// The feature fetch against its limits, and where the time went.
void print_fetch(const RunSetting& run, const Summary& s) {
  const Row& sum = s.sum;
  std::printf("remote bytes per batch     %.3g  (features fetched from other ranks, after the cache)\n", sum.remote_bytes / sum.steps);
  if (sum.remote_rows > 0)
    std::printf("cache hit rate             %.3f  (setup, shards mapped in and cache built: %.2f s)\n", s.hit, run.cache_s);
  else
    std::printf("cache hit rate             -  (no input row is owned on another node: nothing to cache; setup, shards mapped in: %.2f s)\n", run.cache_s);
  std::printf("local gather               %.2f GB/s vs memcpy random-row gather %.2f GB/s: %.0f%%\n", sum.local_gbs, sum.memcpy_gbs,
              sum.memcpy_gbs > 0 ? 100 * sum.local_gbs / sum.memcpy_gbs : 0.0);
  if (sum.remote_bytes > 0) {
    std::printf("remote fetch               %.3f GB/s vs raw MPI alltoallv of the same bytes %.3f GB/s: %.2fx the raw time (fetch: ids out, rows back in one alltoallv; raw: the rows only)\n", s.remote_gbs,
                s.raw_gbs, sum.fetch_remote_s / sum.raw_s);
    // The fetch's passes over the rows, each against the raw alltoallv: the owners' gather reads
    // the asked rows at random from the mapped file and the scatter writes each received row to
    // its place in the batch, two copies the raw exchange of one contiguous buffer does not make.
    // The row exchange includes waiting for the peer whose gather took longer.
    std::printf("  of which (x the raw)     id exchange %.2f, owners' gather %.2f, row exchange %.2f, scatter %.2f, grouping %.2f\n",
                sum.id_exchange_s / sum.raw_s, sum.gather_s / sum.raw_s, sum.row_exchange_s / sum.raw_s, sum.scatter_s / sum.raw_s,
                (sum.fetch_remote_s - sum.id_exchange_s - sum.gather_s - sum.row_exchange_s - sum.scatter_s) / sum.raw_s);
  } else {
    std::printf("remote fetch               none (every input row is owned, cached%s)\n", sum.node_local_rows > 0 ? " or on this node" : "");
  }
  const double node_local_bytes = sum.node_local_rows * static_cast<double>(run.row_bytes);
  if (node_local_bytes > 0) {
    // Rows of node-local ranks, read from their mapped shards: the same bytes a remote
    // fetch would move, without the exchange, the owners' gather or the scatter.
    std::printf("same-node rows             %.0f per batch, read from the shards of %.3g other ranks (mean per rank) at %.2f GB/s vs raw MPI alltoallv of the same bytes %.2f GB/s: %.2fx the raw time\n",
                sum.node_local_rows / sum.steps, sum.node_local_peers, node_local_bytes / sum.node_local_s / 1e9, node_local_bytes / sum.raw_node_local_s / 1e9, sum.node_local_s / sum.raw_node_local_s);
  }
  const double total = sum.sample_s + sum.exchange_s + sum.fetch_local_s + sum.fetch_cache_s + sum.node_local_s + sum.fetch_remote_s + sum.skew_s + sum.sample_skew_s;
  std::printf("time split                 sample %.0f%%, sampling exchange %.0f%%, local fetch %.0f%%, cache %.0f%%, same-node rows %.0f%%, remote fetch %.0f%%, "
              "waiting for the slowest rank before the batch %.0f%% and before the fetch %.0f%%  (%.2f s wall, slowest rank)\n",
              100 * sum.sample_s / total, 100 * sum.exchange_s / total, 100 * sum.fetch_local_s / total, 100 * sum.fetch_cache_s / total,
              100 * sum.node_local_s / total, 100 * sum.fetch_remote_s / total, 100 * sum.sample_skew_s / total, 100 * sum.skew_s / total, s.max_wall);
}

boost::json::object report_json(const RunSetting& run, const Summary& s) {
  const Row& sum = s.sum;
  const SamplerConfig& cfg = run.cfg;
  return {{"ranks", run.ranks}, {"steps_per_rank", sum.steps / s.ranks}, {"wall_s", s.max_wall}, {"eager_inline_bytes", comm::eager_inline_bytes(comm::eager_setting(), run.ranks)}, {"fanouts", fanouts_text(cfg.fanouts)}, {"batch", cfg.batch_size}, {"wire_dtype", run.wire},
          {"sampled_edges_per_s_per_core", s.edges_per_core_s}, {"sampled_edges_per_batch", sum.sampled_edges / sum.steps}, {"input_nodes_per_batch", sum.input_nodes / sum.steps},
          {"remote_bytes_per_batch", sum.remote_bytes / sum.steps}, {"cache_hit_rate", sum.remote_rows > 0 ? boost::json::value(s.hit) : boost::json::value(nullptr)},
          {"rows_sampled_by_owners_per_batch", sum.rows_by_owners / sum.steps}, {"sampling_bytes_per_batch", sum.sampling_bytes / sum.steps},
          {"local_gather_gbs", sum.local_gbs}, {"memcpy_gather_gbs", sum.memcpy_gbs}, {"remote_fetch_gbs", s.remote_gbs},
          {"raw_alltoallv_gbs", s.raw_gbs}, {"remote_vs_raw_time", sum.raw_s > 0 ? sum.fetch_remote_s / sum.raw_s : 0.0},
          {"remote_exchanges_vs_raw_time", sum.raw_s > 0 ? sum.fetch_exchange_s / sum.raw_s : 0.0},
          {"node_local", cfg.node_local}, {"node_local_peers_mean", sum.node_local_peers},
          {"same_node_rows_per_batch", sum.node_local_rows / sum.steps},
          {"same_node_vs_raw_time", sum.raw_node_local_s > 0 ? sum.node_local_s / sum.raw_node_local_s : 0.0},
          {"remote_parts_vs_raw_time",
           {{"id_exchange", sum.raw_s > 0 ? sum.id_exchange_s / sum.raw_s : 0.0}, {"gather", sum.raw_s > 0 ? sum.gather_s / sum.raw_s : 0.0},
            {"row_exchange", sum.raw_s > 0 ? sum.row_exchange_s / sum.raw_s : 0.0}, {"scatter", sum.raw_s > 0 ? sum.scatter_s / sum.raw_s : 0.0}}},
          {"time_s", {{"sample", sum.sample_s}, {"sample_exchange", sum.exchange_s}, {"fetch_local", sum.fetch_local_s}, {"fetch_cache", sum.fetch_cache_s}, {"fetch_same_node", sum.node_local_s}, {"fetch_remote", sum.fetch_remote_s}, {"skew_wait", sum.skew_s}, {"skew_wait_before_batch", sum.sample_skew_s}}}};
}

// One DGL sampler run's command line, less its process count and seed.
struct DglCommand {
  std::string python, dataset_dir, fanouts;  // fanouts input-first, as DGL lists them
  int batch = 0;
  bool replace = false;
  long long max_batches = 0;
};

struct DglRuns {
  double edges_per_s = 0;  // the mean over the processes
  boost::json::array runs;
};

// Runs `procs` DGL processes at once, one thread each like one of our ranks, their timed loops
// started together; each writes its result file into a scratch folder, read once all have ended.
DglRuns run_dgl(const DglCommand& dgl, int procs) {
  const fs::path script = fs::path(SHARDGNN_SOURCE_DIR) / "bench/peers/dgl_sampler.py";
  std::string dir = (fs::temp_directory_path() / "shardgnn-dgl-XXXXXX").string();
  if (!::mkdtemp(dir.data())) throw std::runtime_error("cannot make a folder for the DGL processes' results");
  const auto result = [&](int i) { return (fs::path(dir) / ("result-" + std::to_string(i) + ".json")).string(); };
  std::vector<std::future<ProcessResult>> runs;
  for (int i = 0; i < procs; ++i) {
    std::vector<std::string> argv = {"env", "OMP_NUM_THREADS=1", dgl.python, script.string(), dgl.dataset_dir, "--result", result(i), "--fanouts", dgl.fanouts,
                                     "--batch", std::to_string(dgl.batch), "--max-batches", std::to_string(dgl.max_batches), "--seed", std::to_string(i)};
    if (dgl.replace) argv.push_back("--replace");
    if (procs > 1) argv.insert(argv.end(), {"--sync-dir", dir, "--procs", std::to_string(procs)});
    runs.push_back(std::async(std::launch::async, [argv = std::move(argv)] { return run_process(argv); }));
  }
  DglRuns out;
  std::string failure;
  for (int i = 0; i < procs; ++i) {
    const ProcessResult pr = runs[static_cast<std::size_t>(i)].get();
    try {
      if (pr.status != 0) throw std::runtime_error(failure_line(pr));
      out.runs.push_back(read_json_file(result(i)));
    } catch (const std::exception& e) {
      if (failure.empty()) failure = e.what();
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (!failure.empty()) throw std::runtime_error(failure);
  double rate = 0;
  for (const auto& r : out.runs) rate += r.at("sampled_edges_per_s").to_number<double>();
  out.edges_per_s = rate / static_cast<double>(out.runs.size());
  return out;
}

// DGL's sampler on the same graph, as one process alone and as `node_ranks` at once (the load our
// ranks sampled under); prints the comparison and adds it to `out`. When the peer fails, `out`
// says so and the peer's own error line comes back (empty: it ran).
std::string compare_with_dgl(const std::string& python, const RunSetting& run, const Summary& s, int node_ranks, boost::json::object& out) {
  const DglCommand dgl{python, run.info.dataset_dir, input_first_fanouts(run.cfg.fanouts), run.cfg.batch_size, run.cfg.replace,
                       static_cast<long long>(s.sum.steps)};
  try {
    const auto [alone, alone_runs] = run_dgl(dgl, 1);
    const std::string version(alone_runs.at(0).at("dgl_version").as_string());
    std::printf("DGL %s CPU sampler        %.3g sampled edges / s (1 process alone, 1 thread, same graph, fanouts %s input-first, batch %d): ours %.2fx\n",
                version.c_str(), alone, dgl.fanouts.c_str(), dgl.batch, s.edges_per_core_s / alone);
    out["dgl"] = alone_runs.at(0);
    out["ours_vs_dgl"] = s.edges_per_core_s / alone;
    if (node_ranks > 1) {
      const auto [beside, beside_runs] = run_dgl(dgl, node_ranks);
      std::printf("DGL, %d processes at once   %.3g sampled edges / s per process (as many as rank 0's node has ranks): ours %.2fx\n", node_ranks,
                  beside, s.edges_per_core_s / beside);
      out["dgl_same_load"] = {{"processes", node_ranks}, {"sampled_edges_per_s_per_process", beside}, {"runs", beside_runs}};
      out["ours_vs_dgl_same_load"] = s.edges_per_core_s / beside;
    }
  } catch (const std::exception& e) {
    out["failed"] = "dgl";
    out["error"] = e.what();
    return e.what();
  }
  return "";
}

struct ReleaseOthers {  // rank 0 lets the others go however it leaves
  const comm::Communicator& world;
  ~ReleaseOthers() {
    try {
      world.barrier();
    } catch (...) {
    }
  }
};

}  // namespace

int bench_sampler_main(const std::vector<std::string>& args, const comm::Communicator& world) {
  const std::optional<BenchOptions> opts = parse_options(args, world);
  if (!opts) return 0;
  const SamplerConfig& cfg = opts->cfg;
  PartitionInfo info;
  const Shard shard = load_rank_shard(world, opts->dir, info);
  auto comm = world.dup();
  const auto tc = Clock::now();
  const ShardView shards(shard, comm, cfg.node_local);
  DistSampler sampler(shards, comm, cfg);
  FeatureStore store(shards, comm);
  store.build_cache(cfg, &sampler);
  const RunSetting setting{info, cfg, world.size(), since(tc), row_bytes_of(shard), store.wire_name()};

  RankMeasures m;
  watch_run(m.log, sampler, store, comm, world.size());
  MemcpyBaseline baseline(shard);
  m.run = run_epochs(world, sampler, store, baseline, opts->epochs, opts->max_steps);
  m.sampler = sampler.counters();
  m.features = store.counters();
  m.memcpy_gbs = baseline.gbs();
  const std::size_t wire_bytes = store.wire_value_bytes();
  m.raw = replay_raw_alltoallv(world, comm, m.log.replies, wire_bytes, feature_value_bytes(shard.feature_dtype));
  m.row_bytes = setting.row_bytes;
  m.wire_row_bytes = static_cast<std::size_t>(shard.feature_dim) * wire_bytes;
  m.node_local_peers = shards.node_local_peers();
  const auto all = world.allgather(rank_row(m));

  // The DGL peer runs on rank 0's node while the other ranks wait without spinning (every rank
  // switches here, so the barriers below match): both as one process alone and as many processes
  // at once as that node has ranks, the load our ranks sampled under.
  const std::vector<int>& node = shards.node_of_rank();
  const int node_ranks = static_cast<int>(std::count(node.begin(), node.end(), node[0]));
  comm::set_wait_mode(comm::WaitMode::kYield);
  if (world.rank() != 0) {
    world.barrier();
    return 0;
  }
  const ReleaseOthers release{world};
  const Summary s = summarize(all);
  print_sampling(setting, all, s);
  print_fetch(setting, s);
  boost::json::object out = report_json(setting, s);
  const std::string failed = opts->dgl_python ? compare_with_dgl(*opts->dgl_python, setting, s, node_ranks, out) : "";
  if (opts->json) write_json_file(*opts->json, out);
  std::fflush(stdout);
  return report_failures("shardgnn bench sampler", {{"the DGL peer", failed}});
}

}  // namespace shardgnn::cli
