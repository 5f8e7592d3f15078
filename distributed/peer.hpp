// Device-direct exchange between the GPUs of one node through CUDA IPC (docs/design.md §4): every
// rank exports one device "mailbox" (cudaIpcGetMemHandle), the others map it once
// (cudaIpcOpenMemHandle), and from then on kernels write straight into a partner GPU's memory
// over NVLink and raise a sequence-number flag there; the partner's kernel spins on its flag.
// No host, no MPI, no copy engine on the critical path.
//   peer halo:      one kernel per exchange, on a high-priority communication stream beside
//                   the local product: it copies the boundary rows into one of two staging
//                   buffers of each neighbour (exchange s into staging[s & 1]) and flags,
//                   then waits for its own neighbours' flags, copies its staging into its
//                   halo buffer (a fixed address, for CUDA graphs) and acknowledges. A
//                   sender waits for the acknowledgement of exchange s - 2 before it
//                   overwrites that buffer, which in a solver loop has long arrived: no
//                   exchange waits for a round trip between the GPUs. The executor's stream
//                   joins the kernel before the boundary rows.
//   peer reduction: one kernel writes the sums into every rank's slot for this rank, flags,
//                   waits for every rank's flag, and adds the slots in rank order (the same
//                   order on every rank, so every rank gets bit-identical sums). Two slot sets
//                   used alternately make acknowledgements unnecessary.
// Sequence numbers live in device memory, so the kernels can be recorded into a CUDA graph
// and replayed (graph_safe). A partner that never answers ends in a kernel trap after
// HEPTANE_PEER_TIMEOUT seconds (default 120), reported as a launch failure, not a hang.
// Only for CUDA executors with every rank on one node and its own GPU, peer access between
// every pair, and eager module loading (CUDA_MODULE_LOADING=EAGER, which the Communicator
// sets when it can): with lazy loading a kernel's first launch can wait for a spinning peer
// kernel that waits for a rank stuck the same way (the CUDA programming guide's hazard for
// kernels that wait on each other). Construction is collective.
#pragma once

#include <memory>

#include "core/reducer.hpp"
#include "distributed/halo.hpp"

namespace heptane::dist {

/// Whether the peer models can run: CUDA executor, two or more ranks on one node, each with
/// its own GPU, peer access between every pair, eager module loading (collective: every rank
/// must call it).
bool peer_capable(const Executor& exec, const Communicator& comm);

std::unique_ptr<Reducer> make_peer_reducer(std::shared_ptr<const Communicator> comm,
                                           std::shared_ptr<const Executor> exec);

template <class VT>
std::unique_ptr<HaloExchange<VT>> make_peer_halo(const HaloPlan& plan,
                                                 std::shared_ptr<const Communicator> comm,
                                                 std::shared_ptr<const Executor> exec);

}  // namespace heptane::dist
