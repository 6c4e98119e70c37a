// What a resumed job may change: the keys whose new values a job continued from its checkpoint
// can honour (its length, learning rate and schedule, eval, logging and checkpoint cadence,
// restarts), and the recorded job file with such --set overrides applied.
//
//   LoadResult r = ApplyResumeSettings(record.spec_toml, "job 5", {"train.epochs=3"});
//   if (!r.ok()) ... r.diagnostics name each key that may not change, or a bad value
//   store.SetJobSpec(5, FormatResolvedJob(*r.job), ResumeSettingsReason(overrides));
//
// Invariant: nothing that shapes the checkpoint (model, data, batch size, seed, optimizer type,
// cluster layout) is ever in the list, so a resumed job always matches its checkpoint. Pure
// functions: safe for concurrent use.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/job_file.h"

namespace dtrain::config {

// The dotted keys that may change on resume, in the order the manual lists them.
std::span<const std::string_view> ResumableKeys();
// "train.epochs, train.steps, ...": for messages.
std::string ResumableKeyList();

// The recorded, resolved job file `spec_toml` with `overrides` applied and validated as
// `checks` says (a daemon passes DataFiles::kUnchecked). An override of any other key is a
// diagnostic at file "--set" naming the key and what may change; nothing is applied then.
LoadResult ApplyResumeSettings(std::string_view spec_toml, const std::string& display_path,
                               const std::vector<std::string>& overrides,
                               const JobChecks& checks = {});

// The event reason recorded with the new settings: "resumed with train.epochs=3, optimizer.lr=0.01".
std::string ResumeSettingsReason(const std::vector<std::string>& overrides);

}  // namespace dtrain::config
