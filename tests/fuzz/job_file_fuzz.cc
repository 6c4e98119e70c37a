// Fuzz target: the job-file parser (config/job_file.h), the code behind `dtrain run`, `dtrain
// validate` and the daemon's submit. An input is TOML text, optionally followed by NUL-separated
// --set overrides ("text\0train.epochs=1\0model.hidden=[8]"). A job that loads must format
// (FormatResolvedJob), load again from that text, and format to the same text. Invariants: no
// crash, no leak, no exception, a diagnostic for every refusal.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/job_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dtrain::config;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  std::vector<std::string> overrides;
  if (nul != std::string_view::npos) {
    std::string_view rest = input.substr(nul + 1);
    while (!rest.empty() && overrides.size() < 8) {
      const std::size_t end = rest.find('\0');
      overrides.emplace_back(rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
  }
  // Relative data paths resolve under "/", where they name nothing.
  const LoadResult loaded = ParseJobText(text, "fuzz.toml", overrides, "/");
  if (loaded.ok() != loaded.diagnostics.empty()) __builtin_trap();
  if (!loaded.ok()) return 0;
  const std::string resolved = FormatResolvedJob(*loaded.job);
  const LoadResult again = ParseJobText(resolved, "fuzz.toml", {}, "/");
  if (!again.ok() || FormatResolvedJob(*again.job) != resolved) __builtin_trap();
  return 0;
}
