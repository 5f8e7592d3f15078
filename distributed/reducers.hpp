// Reducers (core/reducer.hpp) over a Communicator: the sums of one reduction point travel
// together, once.
//   mpi   MPI_Allreduce on host scalars; on a GPU the sums go through a page-locked buffer
//         (device -> host, the stream is waited for, all-reduce, host -> device).
//   nccl  ncclAllReduce in place on the device, queued on the executor's stream: the host
//         never waits.
//   peer  one kernel writes the sums into every GPU of the node over NVLink (CUDA IPC) and
//         adds what the others wrote, in rank order (distributed/peer.hpp).
#pragma once

#include <memory>
#include <string>

#include "core/reducer.hpp"
#include "distributed/communicator.hpp"

namespace heptane::dist {

enum class ReduceModel { automatic, mpi, nccl, peer };
/// "auto", "mpi", "nccl", "peer". InputError naming the choices.
ReduceModel parse_reduce_model(const std::string& name);
const char* to_string(ReduceModel m) noexcept;
/// auto: on GPUs peer when every rank has a GPU of its own on one node with peer access
/// between them (and eager module loading), else nccl
/// when the build has NCCL and every rank of the node has a GPU of its own (NCCL refuses two
/// ranks on one device), else mpi; mpi on the CPU. Collective on GPUs.
ReduceModel resolve_reduce_model(ReduceModel m, const Executor& exec, const Communicator& comm);

std::unique_ptr<Reducer> make_reducer(ReduceModel model, std::shared_ptr<const Communicator> comm,
                                      std::shared_ptr<const Executor> exec);

}  // namespace heptane::dist
