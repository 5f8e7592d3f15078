// The one Boost.Test main of every test program (header-only variant: it builds where only
// the Boost headers are installed, as on the GPU machine).
//
// HEPTANE_TEST_DEVICE=cuda runs the same test sources against the CUDA executor. Without a
// CUDA device (or in a CPU-only build) the program prints why and exits with 77, which ctest
// reports as skipped (SKIP_RETURN_CODE), never as passed.
#define BOOST_TEST_MODULE heptane
#include <boost/test/included/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/executor.hpp"
#include "tests/test_common.hpp"

namespace {
struct DeviceGate {
    DeviceGate()
    {
        const char* dev = std::getenv("HEPTANE_TEST_DEVICE");
        if (dev && std::string(dev) == "cuda") {
            if (!heptane::built_with_cuda()) {
                std::printf(
                    "SKIPPED: HEPTANE_TEST_DEVICE=cuda but this build has no CUDA back end\n");
                std::exit(77);
            }
            if (heptane::CudaExecutor::device_count() == 0) {
                std::printf("SKIPPED: HEPTANE_TEST_DEVICE=cuda but no CUDA device is visible\n");
                std::exit(77);
            }
        }
        if (heptane::test::needs_data() && !heptane::test::data_available()) {
            std::printf("SKIPPED: the real-matrix folder %s is missing (set HEPTANE_DATA_DIR)\n",
                        heptane::test::data_dir().c_str());
            std::exit(77);
        }
    }
};
}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(DeviceGate);

bool heptane::test::needs_data()
{
    return HEPTANE_TEST_NEEDS_DATA != 0;
}
