// Where a long pipeline's time, I/O and memory go, step by step (generation's passes,
// partitioning's levels), for `bench scale`'s step table: each step's wall time, the bytes it read
// and wrote (/proc/self/io: read_bytes and write_bytes reached the storage layer, rchar and wchar
// passed through read/write calls, page cache included), and this process's anonymous memory
// (RssAnon) at its start, its end and its peak, sampled on a thread of its own (kSamplePeriod).
// Written as one JSON line a step to the file SHARDGNN_STEP_LOG names (a rank of an MPI job adds
// ".rank<R>", R from PMI_RANK); with the variable unset every call is a no-op. Memory mapped from
// files is not anonymous and is not counted: the step table reports what a process holds beyond
// the files it maps.
#pragma once

#include <string>

namespace shardgnn::steps {

// Ends the step in progress (if any) and starts `name`.
void begin(const std::string& name);
// Ends the step in progress (if any).
void end();

// A step for the scope it lives in: begin(name) now, end() when it goes.
class Scope {
 public:
  explicit Scope(const std::string& name) { begin(name); }
  ~Scope() { end(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

}  // namespace shardgnn::steps
