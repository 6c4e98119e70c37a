#include "core/math/blas_kernels.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// This process's arguments as the kernel received them (/proc/self/cmdline: NUL-terminated),
// whatever main's caller has since done to argv (Boost.Test removes the arguments it parsed).
std::vector<std::string> OwnArguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  return args;
}

template <std::size_t N>
bool Among(std::string_view core, const std::array<std::string_view, N>& cores) {
  return std::find(cores.begin(), cores.end(), core) != cores.end();
}

}  // namespace

const char* BlasCoreName() { return openblas_get_corename(); }

void UseBestBlasKernels() {
  std::vector<std::pair<const char*, const char*>> settings;  // (variable, value) to set
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    std::string core = BlasCoreName();
    std::transform(core.begin(), core.end(), core.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (HasAvx512()) {
      if (!Among(core, kAvx512Cores)) settings.emplace_back("OPENBLAS_CORETYPE", "SkylakeX");
    } else if (HasAvx2()) {
      if (!Among(core, kAvx2Cores)) settings.emplace_back("OPENBLAS_CORETYPE", "Haswell");
    }
  }
  if (std::getenv("OMP_WAIT_POLICY") == nullptr)
    settings.emplace_back("OMP_WAIT_POLICY", "PASSIVE");
  if (settings.empty()) return;
  std::vector<std::string> args = OwnArguments();
  if (args.empty()) return;
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  for (const auto& [variable, value] : settings) {
    if (::setenv(variable, value, 1) != 0) return;
  }
  ::execv("/proc/self/exe", argv.data());
  // Could not execute again: go on as loaded (slower kernels, spinning OpenMP threads).
  for (const auto& setting : settings) ::unsetenv(setting.first);
}

}  // namespace dtrain::math
