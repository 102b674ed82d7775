// What an exiting rank does for its launcher's sake. No MPI here: it runs after MPI has finalised.
#pragma once

#include <sys/types.h>

namespace shardgnn::comm {

// Call just before exiting with a stop's status (75), after MPI has finalised, with the pid that
// sent the stop signal. When that sender is MPICH's hydra_pmi_proxy (mpiexec forwarding what it
// received) and this process is its child, MPICH 4.0's proxy reports a status of 0 for a child it
// reaps only after the child's output pipes have closed, which is most of the time (upstream
// removed that in MPICH 4.1). So a short-lived child of ours keeps stdout open until the proxy has
// reaped this process: it closes stderr once this process has exited, which wakes the proxy while
// stdout is still open, and stdout once the proxy has reaped it. Nothing otherwise.
void keep_exit_status_for_proxy(pid_t sender) noexcept;

}  // namespace shardgnn::comm
