// Configuration of the distributed sampler and feature store; plain structs with documented
// defaults, filled by the CLI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/schema.hpp"
#include "partition/config.hpp"

namespace shardgnn {

// How rows travel between ranks: as stored, or rounded to bfloat16 (half the bytes; the same
// 8-bit exponent, 8 of float32's 24 significand bits). Cached rows are rounded alike, so a row's
// value does not depend on whether the cache or the exchange served it.
enum class WireDtype { kFloat32, kBFloat16 };

enum class CachePolicy {
  kNone,
  kDegree,     // cache the halo rows of highest degree (sampling reaches a node along any of its edges)
  kPresample,  // SALIENT++'s VIP idea: presample batches, cache the remote rows fetched most
};

struct SamplerConfig {
  // Fanouts by hop from the seeds outward: {15, 10, 5} samples 15 neighbours of each seed, 10 of
  // each node one hop out, 5 at the outermost hop. -1 takes all neighbours. (DGL lists the same
  // fanouts from the input side: pass them reversed to compare.)
  std::vector<int> fanouts = {15, 10, 5};
  // Typed graphs: fanouts by hop per relation (its index in the schema), [hop][relation]. Empty:
  // fanouts[hop] for every relation, MLPerf's and PyG's convention (a node of a typed graph
  // draws up to fanouts[hop] neighbours along each of its relations).
  std::vector<std::vector<int>> relation_fanouts;
  // `--fanouts` text past its first ';' ("cites=5,5,5;topic=0,0,0"): the per-relation overrides,
  // resolved into relation_fanouts once the graph's schema is known (resolve_relation_fanouts).
  std::string relation_overrides;
  bool replace = false;       // sample with replacement
  int batch_size = 1024;      // seeds per batch, per rank
  std::uint64_t seed = 0;
  int prefetch = 2;           // batches sampled ahead by the pipeline's thread (0: no thread)
  CachePolicy cache_policy = CachePolicy::kDegree;
  double cache_fraction = 0.2;  // cache this fraction of the rows owned on other nodes (all other ranks' with node_local off; 0 = use cache_mb)
  double cache_mb = 0;          // alternatively: a cache size limit in MB (10^6 bytes) of feature rows
  // A cache sized by cache_fraction is capped so that the caches of a node's ranks together take
  // at most this share of the node's usable memory (a fifth of a large graph's remote rows may not
  // fit at all). A size given by cache_mb is taken as asked. Filling the cache stages its rows once
  // more, so the peak during setup is about twice the share.
  double cache_memory_share = 0.25;
  WireDtype wire_dtype = WireDtype::kFloat32;  // feature rows on the wire (node-local and own rows are read as stored)
  int presample_batches = 64; // batches presampled by the kPresample policy
  bool with_degrees = false;  // also fetch every input node's full-graph degree (MiniBatch::degrees)
  bool remote_seeds = false;  // seeds may be owned by other ranks (runtime rebalancing, class-balanced
                              // seed sampling): their labels come with the installed schedule
                              // (DistSampler::set_schedule with labels, SeedScheduler), else are
                              // fetched from the owners, collectively
  // Per-node indexes over all nodes of the graph (the sampler's batch positions, 8 bytes a node;
  // the cache's rows, 4 bytes a node) while they fit in this many bytes; beyond, nodes owned
  // elsewhere go through hash maps, whose lookups are cache misses no prefetch reaches.
  std::uint64_t dense_index_bytes = 256ULL << 20;
  // Rows owned by a node-local rank (another rank on this node) are read from its shard file,
  // mapped here (the node's page cache holds it once), instead of asked for over MPI; the cache
  // then holds only rows owned on other nodes. Off: every remote row goes through the cache and the exchange.
  bool node_local = true;
};

// parse_fanouts ("15,10,5" -> {15, 10, 5}) is declared in partition/config.hpp: the partitioner's
// cost model takes the same --fanouts, and partition sits below the sampler.
CachePolicy parse_cache_policy(const std::string& name);  // none, degree, presample
std::string cache_policy_name(CachePolicy p);
WireDtype parse_wire_dtype(const std::string& name);  // float32, bf16
std::string wire_dtype_name(WireDtype d);
inline std::size_t wire_value_bytes(WireDtype d) { return d == WireDtype::kBFloat16 ? 2 : 4; }  // one feature value on the wire
// Per-relation fanouts from `--fanouts` text on a typed graph: "15,10,5" gives every relation
// those fanouts by hop (MLPerf's convention); "15,10,5;cites=5,5,5;topic=0,0,0" then overrides the
// named relations (a relation's name, or its full label "paper__cites__paper" where two share a
// name). Each override lists as many hops as the default. [hop][relation], InputError naming the
// item otherwise.
std::vector<std::vector<int>> parse_relation_fanouts(const std::string& text, const GraphSchema& schema);
// `--fanouts` as the command line gives it: the default fanouts (returned) and, past the first
// ';', the per-relation overrides (into `overrides`, checked once the schema is known).
std::vector<int> parse_fanouts_option(const std::string& text, std::string& overrides);
// Sets c.relation_fanouts from c.fanouts and c.relation_overrides on a typed graph; an InputError
// when overrides are given for an untyped one.
void resolve_relation_fanouts(SamplerConfig& c, const GraphSchema& schema);

// Throws InputError for a configuration no run can use (batch size < 1, no fanouts, ...).
void validate(const SamplerConfig& c);

}  // namespace shardgnn
