#include "core/math/precision.h"

#include <cpuid.h>
#include <oneapi/dnnl/dnnl.h>

#include <atomic>
#include <cstdlib>

namespace dtrain::math {
namespace {

std::atomic<Precision>& Current() {
  static std::atomic<Precision> precision{Precision::kFp32};
  return precision;
}

struct CpuBf16 {
  bool avx512_bf16 = false;
  bool amx_bf16 = false;
};

// cpuid leaf 7: subleaf 1 EAX bit 5 is AVX512_BF16, subleaf 0 EDX bit 22 is AMX-BF16.
CpuBf16 CpuidBf16() {
  CpuBf16 cpu;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0) {
    cpu.amx_bf16 = (edx >> 22) & 1u;
    if (eax >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0) {
      cpu.avx512_bf16 = (eax >> 5) & 1u;
    }
  }
  return cpu;
}

}  // namespace

Precision CurrentPrecision() { return Current().load(std::memory_order_relaxed); }

void SetPrecision(Precision precision) { Current().store(precision, std::memory_order_relaxed); }

const char* PrecisionName(Precision precision) {
  return precision == Precision::kBf16 ? "bf16" : "fp32";
}

Bf16Support NativeBf16() {
  const CpuBf16 cpu = CpuidBf16();
  if (!cpu.avx512_bf16 && !cpu.amx_bf16) {
    return {false, "this CPU lacks AVX512_BF16 and AMX-BF16"};
  }
  // oneDNN's ISAs are nested bit sets: every one from avx512_core_bf16 up has its bits.
  const unsigned isa = dnnl_get_effective_cpu_isa();
  const bool amx = (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
  if ((isa & dnnl_cpu_isa_avx512_core_bf16) != dnnl_cpu_isa_avx512_core_bf16) {
    const char* cap = std::getenv("DNNL_MAX_CPU_ISA");
    return {false, std::string("this CPU has ") + (cpu.amx_bf16 ? "AMX-BF16" : "AVX512_BF16") +
                       " but oneDNN may not use it" +
                       (cap != nullptr ? std::string(" (DNNL_MAX_CPU_ISA=") + cap + ")" : "")};
  }
  return {true, amx && cpu.amx_bf16 ? "AMX-BF16" : "AVX512_BF16"};
}

std::string Bf16Refusal(const Bf16Support& support) {
  return "\"bf16\" needs a CPU that multiplies bf16 natively (AVX512_BF16 or AMX-BF16), and " +
         support.how;
}

}  // namespace dtrain::math
