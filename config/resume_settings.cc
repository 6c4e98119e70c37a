#include "config/resume_settings.h"

#include <algorithm>
#include <iterator>

namespace dtrain::config {
namespace {

constexpr std::string_view kResumable[] = {
    "train.epochs",          "train.steps",           "train.target_accuracy",
    "train.eval_every",      "train.log_every",       "train.on_divergence",
    "optimizer.lr",          "optimizer.schedule",    "optimizer.warmup_steps",
    "optimizer.step_size",   "optimizer.gamma",       "optimizer.min_lr",
    "checkpoint.every_steps", "checkpoint.every_seconds", "checkpoint.keep",
    "restart.max_restarts",
};

// The key of "key=value", without the blanks around it; the whole text when it has no '='.
std::string KeyOf(const std::string& override_text) {
  std::string_view key(override_text);
  key = key.substr(0, key.find('='));
  const std::size_t begin = key.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return "";
  return std::string(key.substr(begin, key.find_last_not_of(" \t") - begin + 1));
}

}  // namespace

std::span<const std::string_view> ResumableKeys() { return kResumable; }

std::string ResumableKeyList() {
  std::string list;
  for (std::string_view key : kResumable) {
    if (!list.empty()) list += ", ";
    list += key;
  }
  return list;
}

LoadResult ApplyResumeSettings(std::string_view spec_toml, const std::string& display_path,
                               const std::vector<std::string>& overrides,
                               const JobChecks& checks) {
  LoadResult refused;
  for (const std::string& text : overrides) {
    const std::string key = KeyOf(text);
    if (std::find(std::begin(kResumable), std::end(kResumable), key) != std::end(kResumable)) {
      continue;
    }
    refused.diagnostics.push_back(
        {"--set", 0, 0, key,
         "cannot change when a job resumes from its checkpoint; what may change: " +
             ResumableKeyList()});
  }
  if (!refused.diagnostics.empty()) return refused;
  return ParseJobText(spec_toml, display_path, overrides, "/", checks);
}

std::string ResumeSettingsReason(const std::vector<std::string>& overrides) {
  std::string reason = "resumed with ";
  for (std::size_t i = 0; i < overrides.size(); ++i) {
    reason += (i == 0 ? "" : ", ") + overrides[i];
  }
  return reason;
}

}  // namespace dtrain::config
