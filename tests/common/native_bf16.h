// Boost.Test preconditions for the tests of train.precision = "bf16": they run where this CPU
// multiplies bf16 natively (math::NativeBf16) and say why they skip where it does not; the tests
// of its refusal the other way round.
//
//   BOOST_AUTO_TEST_CASE(name, *boost::unit_test::precondition(testing::NativeBf16Here)) { ... }
#pragma once

#include <boost/test/unit_test.hpp>

#include "core/math/precision.h"

namespace dtrain::testing {

inline boost::test_tools::assertion_result NativeBf16Here(boost::unit_test::test_unit_id) {
  const math::Bf16Support bf16 = math::NativeBf16();
  boost::test_tools::assertion_result here(bf16.native);
  here.message() << "no native bf16 products here: " << bf16.how;
  return here;
}

// The opposite, for the tests of the refusal: ctest runs them again with oneDNN capped at AVX2
// (DNNL_MAX_CPU_ISA), so they run on every CPU.
inline boost::test_tools::assertion_result NoNativeBf16Here(boost::unit_test::test_unit_id) {
  const math::Bf16Support bf16 = math::NativeBf16();
  boost::test_tools::assertion_result lacking(!bf16.native);
  lacking.message() << "this CPU multiplies bf16 natively (" << bf16.how << ")";
  return lacking;
}

// Sets a precision for one test, and float32 however the test ends.
struct ScopedPrecision {
  explicit ScopedPrecision(math::Precision precision) { math::SetPrecision(precision); }
  ~ScopedPrecision() { math::SetPrecision(math::Precision::kFp32); }
  ScopedPrecision(const ScopedPrecision&) = delete;
  ScopedPrecision& operator=(const ScopedPrecision&) = delete;
};

}  // namespace dtrain::testing
