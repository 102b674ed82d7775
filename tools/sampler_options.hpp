// The sampler options `train` and `bench sampler` share, declared once and bound into a
// SamplerConfig, whose defaults they show. Only the MPI programs include this (it needs the
// sampler library).
#pragma once

#include <string>
#include <vector>

#include "sampler/config.hpp"
#include "tools/cli.hpp"

namespace shardgnn::cli {

inline void add_sampler_options(po::options_description& o, SamplerConfig& c) {
  o.add_options()
      ("fanouts", bound(c.fanouts, [&c](const std::string& v) { return parse_fanouts_option(v, c.relation_overrides); }, fanouts_text),
       "neighbours per hop from the seeds outward (-1 = all, 0 = none: a features-only baseline); their count is the depth. "
       "Typed graphs: along each relation; \"15,10,5;cites=5,5,5\" sets a relation's own")
      ("batch", bound(c.batch_size), "seeds per batch per rank")
      ("replace", po::bool_switch(&c.replace), "sample with replacement")
      ("cache-policy", bound(c.cache_policy, parse_cache_policy, cache_policy_name), "remote feature cache: none, degree or presample")
      ("cache-fraction", bound(c.cache_fraction),
       "cache this fraction of the rows owned on other nodes (with --node-local off: of all the rows the rank does not own)")
      ("cache-mb", bound(c.cache_mb), "or: a cache of this many MB (used when --cache-fraction is 0)")
      ("wire-dtype", bound(c.wire_dtype, parse_wire_dtype, wire_dtype_name),
       "feature rows between ranks: float32, or bf16 (half the bytes, rounded to 8 significand bits; cached rows are rounded alike, kept as float32)")
      ("node-local", bound(c.node_local, [](const std::string& v) { return parse_on_off(v, "--node-local"); }, [](bool on) { return std::string(on ? "on" : "off"); }),
       "on: read the rows of shards owned by ranks on the same node from their files (the page cache), off: over MPI like any remote row");
}

}  // namespace shardgnn::cli
