// BDIA-GH CUDA product with fused dot products and an input formed in the product (a BiCGStab
// step's p or s), (MT, VT) = (float, double). The kernels are in bdia_dots.cuh; one precision per
// file so that the CUDA build spreads over cores.
#include "formats/bdia/bdia_dots.cuh"

namespace heptane::kernels {
HEPTANE_INSTANTIATE_BDIA_STEP_DOTS(float, double)
}  // namespace heptane::kernels
