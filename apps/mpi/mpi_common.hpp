// Shared by the MPI commands of the heptane CLI (heptane solve under mpirun, bench comm,
// bench scale): MPI set-up, rank -> executor binding, printing on rank 0.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "core/executor.hpp"
#include "distributed/communicator.hpp"

namespace heptane::cli {

/// MPI_Init on construction (unless already initialised), MPI_Finalize on destruction.
class MpiSession {
public:
    MpiSession();
    ~MpiSession();
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;

private:
    bool owns_ = false;
};

/// "auto": this rank's GPU (node-local rank mod devices) when there is one, else the CPU;
/// "cpu"; "gpu"/"cuda": this rank's GPU (an error without one).
std::shared_ptr<const Executor> rank_executor(const std::string& device,
                                              const dist::Communicator& comm);

/// Maximum of v over the ranks.
double max_over_ranks(double v, const dist::Communicator& comm);

}  // namespace heptane::cli
