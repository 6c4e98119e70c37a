#include "allocation_probe.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <new>

namespace dtrain::testing {
namespace {

struct ProbeState {
  bool active = false;
  std::size_t count = 0;
  std::size_t largest = 0;
};
thread_local ProbeState probe_state;

}  // namespace

AllocationProbe::AllocationProbe() {
  assert(!probe_state.active && "one AllocationProbe per thread at a time");
  probe_state = {.active = true, .count = 0, .largest = 0};
}

AllocationProbe::~AllocationProbe() { probe_state.active = false; }

std::size_t AllocationProbe::count() const { return probe_state.count; }

std::size_t AllocationProbe::largest() const { return probe_state.largest; }

}  // namespace dtrain::testing

void* operator new(std::size_t size) {
  dtrain::testing::ProbeState& s = dtrain::testing::probe_state;
  if (s.active) {
    ++s.count;
    s.largest = std::max(s.largest, size);
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void operator delete(void* p) noexcept { std::free(p); }

void operator delete(void* p, std::size_t) noexcept { std::free(p); }
