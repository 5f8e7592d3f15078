// BatchGraph (solver/vector/vector_ops.hpp): stream capture of a batch of iterations into a
// CUDA graph, instantiated once and updated in place by later recordings.
#include "solver/vector/vector_ops.hpp"

#include <vector>

#ifdef HEPTANE_HAVE_CUDA
#include "core/cuda_common.hpp"
#endif

namespace heptane {

BatchGraph::~BatchGraph()
{
    release();
}

#ifdef HEPTANE_HAVE_CUDA

namespace {
cudaStream_t stream_of(const Executor& exec)
{
    HEPTANE_ENSURE(exec.is_cuda(), InputError, "BatchGraph: a CUDA graph needs a CUDA executor");
    return cuda::stream(static_cast<const CudaExecutor&>(exec));
}
/// The stream's L2 access policy window (CudaExecutor::persist_l2), if it has one, on every
/// kernel node of a graph recorded from it, so that the replays keep it.
void carry_l2_window(cudaStream_t stream, cudaGraph_t graph)
{
    cudaStreamAttrValue w{};
    if (cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &w) != cudaSuccess ||
        w.accessPolicyWindow.num_bytes == 0) {
        cudaGetLastError();
        return;
    }
    std::size_t count = 0;
    HEPTANE_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
    std::vector<cudaGraphNode_t> nodes(count);
    HEPTANE_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
    cudaKernelNodeAttrValue v{};
    v.accessPolicyWindow = w.accessPolicyWindow;
    for (cudaGraphNode_t node : nodes) {
        cudaGraphNodeType type{};
        HEPTANE_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
        if (type == cudaGraphNodeTypeKernel)
            HEPTANE_CUDA_CHECK(cudaGraphKernelNodeSetAttribute(
                node, cudaKernelNodeAttributeAccessPolicyWindow, &v));
    }
}
}  // namespace

void BatchGraph::release() noexcept
{
    if (instance_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(instance_));
    instance_ = nullptr;
    recorded_ = false;
}

void BatchGraph::begin(const Executor& exec)
{
    recorded_ = false;
    // thread-local mode: a call from this thread that may not be recorded (a host wait, an
    // allocation) fails the recording instead of silently running
    HEPTANE_CUDA_CHECK(cudaStreamBeginCapture(stream_of(exec), cudaStreamCaptureModeThreadLocal));
}

void BatchGraph::end(const Executor& exec)
{
    cudaGraph_t graph = nullptr;
    HEPTANE_CUDA_CHECK(cudaStreamEndCapture(stream_of(exec), &graph));
    carry_l2_window(stream_of(exec), graph);
    auto inst = static_cast<cudaGraphExec_t>(instance_);
    if (inst) {
        cudaGraphExecUpdateResultInfo info{};
        if (cudaGraphExecUpdate(inst, graph, &info) != cudaSuccess) {
            cudaGetLastError();  // a different shape: instantiate anew
            cudaGraphExecDestroy(inst);
            inst = nullptr;
        }
    }
    if (!inst) {
        // per-node priorities: a kernel launched with a priority attribute (the peer halo's
        // exchange kernel) keeps it inside the graph
        const cudaError_t err =
            cudaGraphInstantiate(&inst, graph, cudaGraphInstantiateFlagUseNodePriority);
        if (err != cudaSuccess) {
            cudaGraphDestroy(graph);
            instance_ = nullptr;
            HEPTANE_THROW(DeviceError, "cudaGraphInstantiate failed: " << cudaGetErrorString(err));
        }
    }
    cudaGraphDestroy(graph);
    instance_ = inst;
    recorded_ = true;
}

void BatchGraph::abandon(const Executor& exec) noexcept
{
    recorded_ = false;
    if (!exec.is_cuda()) return;
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(cuda::stream(static_cast<const CudaExecutor&>(exec)), &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
}

void BatchGraph::launch(const Executor& exec)
{
    HEPTANE_ENSURE(recorded_, InputError, "BatchGraph::launch: nothing recorded");
    HEPTANE_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(instance_), stream_of(exec)));
}

#else  // no CUDA: nothing can be recorded

void BatchGraph::release() noexcept
{
    recorded_ = false;
}
void BatchGraph::begin(const Executor&)
{
    HEPTANE_THROW(NotSupported, "BatchGraph: CUDA graphs in a build without CUDA");
}
void BatchGraph::end(const Executor&) {}
void BatchGraph::abandon(const Executor&) noexcept {}
void BatchGraph::launch(const Executor&)
{
    HEPTANE_THROW(NotSupported, "BatchGraph: CUDA graphs in a build without CUDA");
}

#endif

}  // namespace heptane
