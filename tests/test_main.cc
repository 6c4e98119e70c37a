// The one translation unit that defines Boost.Test's main for each test executable.
#define BOOST_TEST_MODULE dtrain
#include <boost/test/unit_test.hpp>

#include "core/math/blas_kernels.h"

// Tests run the BLAS kernels the processes they start run, so float results compare exactly.
struct BlasKernels {
  BlasKernels() {
    dtrain::math::UseBestBlasKernels();  // with the arguments as given, not as Boost left them
  }
};
BOOST_TEST_GLOBAL_FIXTURE(BlasKernels);
