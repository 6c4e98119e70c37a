// AllocationProbe: counts the heap requests that the creating thread makes through the global
// operator new while the probe lives, so a test can show that a decoder allocates nothing, or
// nothing large, whatever length a hostile header claims.
//
//   AllocationProbe probe;
//   DecodeHeader(bytes, kDefaultMaxPayload, h);
//   BOOST_TEST(probe.count() == 0u);
//
// allocation_probe.cc replaces the test executable's global operator new/delete. Counts only the
// creating thread's allocations; one probe per thread at a time.
#pragma once

#include <cstddef>

namespace dtrain::testing {

class AllocationProbe {
 public:
  AllocationProbe();
  ~AllocationProbe();
  AllocationProbe(const AllocationProbe&) = delete;
  AllocationProbe& operator=(const AllocationProbe&) = delete;

  std::size_t count() const;    // operator new calls so far
  std::size_t largest() const;  // bytes of the largest one
};

}  // namespace dtrain::testing
