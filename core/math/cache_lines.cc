#include "core/math/cache_lines.h"

#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace dtrain::math {
namespace {

#if defined(__x86_64__)
bool HasClflushopt() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ebx & (1u << 23)) != 0;  // CPUID.(EAX=7,ECX=0):EBX bit 23
}

__attribute__((target("clflushopt"))) void Clflushopt(std::span<const float> range) {
  constexpr std::uintptr_t kLine = 64;
  const auto begin = reinterpret_cast<std::uintptr_t>(range.data()) & ~(kLine - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(range.data() + range.size());
  for (std::uintptr_t at = begin; at < end; at += kLine) {
    _mm_clflushopt(reinterpret_cast<void*>(at));
  }
  _mm_sfence();  // the flushes are done before this thread's next stores
}
#endif

}  // namespace

void DropFromCaches(std::span<const float> range) {
#if defined(__x86_64__)
  static const bool has_clflushopt = HasClflushopt();
  if (has_clflushopt && !range.empty()) Clflushopt(range);
#else
  (void)range;
#endif
}

}  // namespace dtrain::math
