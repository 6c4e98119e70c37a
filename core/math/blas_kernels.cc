#include "core/math/blas_kernels.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <string>
#include <string_view>

namespace dtrain::math {
namespace {

// OpenBLAS core names (lower case) at least as fast as the one we would choose.
constexpr std::array<std::string_view, 3> kAvx512Cores = {"skylakex", "cooperlake",
                                                          "sapphirerapids"};
constexpr std::array<std::string_view, 7> kAvx2Cores = {
    "haswell", "zen", "skylakex", "cooperlake", "sapphirerapids", "skylake", "broadwell"};

bool HasAvx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512cd");
}

bool HasAvx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

template <std::size_t N>
bool Among(std::string_view core, const std::array<std::string_view, N>& cores) {
  return std::find(cores.begin(), cores.end(), core) != cores.end();
}

}  // namespace

const char* BlasCoreName() { return openblas_get_corename(); }

void UseBestBlasKernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  std::string core = BlasCoreName();
  std::transform(core.begin(), core.end(), core.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const char* wanted = nullptr;
  if (HasAvx512()) {
    if (!Among(core, kAvx512Cores)) wanted = "SkylakeX";
  } else if (HasAvx2()) {
    if (!Among(core, kAvx2Cores)) wanted = "Haswell";
  }
  if (wanted == nullptr) return;
  if (::setenv("OPENBLAS_CORETYPE", wanted, 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  ::unsetenv("OPENBLAS_CORETYPE");  // could not execute again: go on with the slow kernels
}

}  // namespace dtrain::math
