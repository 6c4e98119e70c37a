// Loading a job file: TOML text plus --set overrides → a validated JobConfig, or the complete
// list of what is wrong with it; and the reverse, a JobConfig as fully resolved TOML text.
//
//   LoadResult r = LoadJobFile("jobs/mnist.toml", {"train.epochs=1", "optimizer.type=adam"});
//   if (!r.ok()) { for (const Diagnostic& d : r.diagnostics) std::cerr << FormatDiagnostic(d); }
//   std::cout << FormatResolvedJob(*r.job);
//
// Every problem is collected, not just the first: syntax errors (one diagnostic, where toml++
// stopped), unknown sections and keys (with a "did you mean" when a known name is close),
// wrong types, out-of-range and non-finite values, missing required keys, data files that do
// not exist or cannot be read, keys that contradict each other, and a model that cannot fit
// [train] memory_limit or the host's memory (JobChecks::host_memory). Places: a value's problem
// is at the value, an unknown key's at the key, a missing key's at its section's header (line
// 0 when the section is absent); a problem with an override is at file "--set", line 0.
//
// Overrides are "dotted.key=value"; the value is TOML ("train.epochs=1", "model.hidden=[64]",
// "optimizer.type=\"adam\"") or, when it does not parse as TOML and holds no whitespace, quotes
// or brackets, a bare string ("optimizer.type=adam"). They replace the file's values before
// validation and are validated the same way. Relative data paths from the file are resolved
// against its directory, those from overrides against the current directory.
//
// No exception escapes these functions. Safe for concurrent use (they share no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/job.h"

namespace dtrain::config {

struct LoadResult {
  std::optional<JobConfig> job;         // set exactly when diagnostics is empty
  std::vector<Diagnostic> diagnostics;  // file order (by line, then column); overrides last

  bool ok() const { return job.has_value(); }
};

// Whether the data files a job names are looked at (that they exist and can be read). Only a
// process with the submitter's rights may look: a daemon parses with kUnchecked, so that no file
// a job names is ever opened or even examined with the daemon's rights, and the job's workers
// (running as the submitter) check them.
enum class DataFiles { kCheck, kUnchecked };

// What is checked beyond the job file itself.
struct JobChecks {
  DataFiles files = DataFiles::kCheck;
  // The memory of the host the job would run on, bytes; 0: not checked. A job whose processes
  // on one host need more (config/job_memory.h) is refused, at model.hidden.
  std::uint64_t host_memory = 0;
  // Whether this host's CPU must run the job as written: train.precision = "bf16" is refused
  // where it has no native bf16. Off where the job runs elsewhere (dtrain submit leaves it to
  // the daemon, as it does the host's memory).
  bool host_cpu = false;
};

// Reads the job file at `path` (kept as JobConfig::source_path and diagnostic file name).
LoadResult LoadJobFile(const std::string& path, const std::vector<std::string>& overrides,
                       const JobChecks& checks = {});

// The same for text already in memory: `display_path` names it in diagnostics (and becomes
// source_path and the default job name's source); relative data paths are resolved against
// `base_dir` (itself made absolute against the current directory).
LoadResult ParseJobText(std::string_view toml_text, const std::string& display_path,
                        const std::vector<std::string>& overrides, const std::string& base_dir,
                        const JobChecks& checks = {});

// The job as TOML with every key present, defaults filled in and paths absolute. Parsing it
// again (with the same display path) yields an equal JobConfig. With kApplicable (for people:
// dtrain validate), only the keys that apply to the job's data format, optimizer, schedule and
// cluster mode: parsing that gives a job that trains the same, not an equal JobConfig.
enum class ResolvedKeys { kAll, kApplicable };
std::string FormatResolvedJob(const JobConfig& job, ResolvedKeys keys = ResolvedKeys::kAll);

}  // namespace dtrain::config
