// BDIA-GH CUDA SpMV, (MT, VT) = (float,float). The kernels are in bdia_impl.cuh; one precision per
// file so that the CUDA build spreads over cores.
#include "formats/bdia/bdia_impl.cuh"

namespace heptane::kernels {
HEPTANE_INSTANTIATE_BDIA(float, float)
}  // namespace heptane::kernels
