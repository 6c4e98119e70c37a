#include "config/slurm_job.h"

#include <array>
#include <cctype>
#include <string>
#include <string_view>

namespace dtrain::config::internal {
namespace {

// A partition, account or QOS name as Slurm accepts it in its configuration.
bool IsSlurmName(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (const char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0 && ch != '_' && ch != '-' && ch != '.') {
      return false;
    }
  }
  return true;
}

bool AllDigits(std::string_view text) {
  if (text.empty() || text.size() > 6) return false;
  for (const char ch : text) {
    if (std::isdigit(static_cast<unsigned char>(ch)) == 0) return false;
  }
  return true;
}

// Slurm's time forms: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
// "days-hours:minutes", "days-hours:minutes:seconds", and "UNLIMITED"/"INFINITE".
bool IsSlurmTime(std::string_view text) {
  if (text == "UNLIMITED" || text == "INFINITE") return true;
  const std::size_t dash = text.find('-');
  std::string_view clock = text;
  if (dash != std::string_view::npos) {
    if (!AllDigits(text.substr(0, dash))) return false;
    clock = text.substr(dash + 1);
  }
  int fields = 0;
  for (std::size_t start = 0;; ++fields) {
    const std::size_t colon = clock.find(':', start);
    if (!AllDigits(clock.substr(start, colon - start))) return false;
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return fields <= 2;
}

// salloc options dtrain sets itself, each with the key that says it instead (empty: none).
struct Owned {
  std::string_view long_name, short_name, instead;
};
constexpr std::array<Owned, 10> kOwnedOptions{{
    {"--ntasks", "-n", "cluster.workers and the mode's processes"},
    {"--cpus-per-task", "-c", "train.threads"},
    {"--job-name", "-J", ""},
    {"--no-shell", "", ""},
    {"--partition", "-p", "slurm.partition"},
    {"--account", "-A", "slurm.account"},
    {"--time", "-t", "slurm.time_limit"},
    {"--qos", "-q", "slurm.qos"},
    {"--uid", "", ""},
    {"--gid", "", ""},
}};

// Why `option` may not be one of slurm.options, or "".
std::string RefuseOption(std::string_view option) {
  if (option.size() < 2 || option[0] != '-') {
    return "must be a salloc option such as \"--constraint=avx512\", got \"" +
           std::string(option) + "\"";
  }
  for (const char ch : option) {
    if (std::iscntrl(static_cast<unsigned char>(ch)) != 0) {
      return "must be one line without control characters";
    }
  }
  const std::string_view name = option.substr(0, option.find('='));
  for (const Owned& owned : kOwnedOptions) {
    const bool is_long = name == owned.long_name;
    const bool is_short = !owned.short_name.empty() &&
                          option.substr(0, owned.short_name.size()) == owned.short_name &&
                          option.substr(0, 2) != "--";
    if (!is_long && !is_short) continue;
    std::string why = "\"";
    why.append(option).append("\": dtrain sets ").append(owned.long_name).append(" itself");
    if (!owned.instead.empty()) why.append(" (from ").append(owned.instead).append(")");
    return why;
  }
  return "";
}

void ReadOptions(TableReader& slurm, std::vector<std::string>* options) {
  const toml::node* node = slurm.Find("options");
  if (node == nullptr) return;
  const toml::array* list = node->as_array();
  if (list == nullptr) {
    slurm.Report(*node, "options",
                 "must be an array of salloc options, such as [\"--constraint=avx512\"]");
    return;
  }
  std::vector<std::string> read;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const toml::node& item = (*list)[i];
    const std::optional<std::string_view> option = item.value<std::string_view>();
    const std::string why = option ? RefuseOption(*option) : "must be a string";
    if (!why.empty()) {
      slurm.Report(item, "options", "option " + std::to_string(i + 1) + " " + why);
      continue;
    }
    read.emplace_back(*option);
  }
  if (!slurm.Failed("options")) *options = std::move(read);
}

void ReadName(TableReader& slurm, std::string_view key, std::string_view what, std::string* out) {
  std::string value;
  const toml::node* node = slurm.String(key, &value);
  if (node == nullptr) return;
  if (!IsSlurmName(value)) {
    slurm.Report(*node, key,
                 "must be a Slurm " + std::string(what) +
                     " name (letters, digits, '_', '-', '.'), got \"" + value + "\"");
    return;
  }
  *out = std::move(value);
}

}  // namespace

void ReadSlurm(TableReader& cluster, TableReader& slurm, ClusterConfig* c, SlurmConfig* s) {
  cluster.Enum("scheduler", ParseScheduler, SchedulerChoices(), &c->scheduler);
  ReadName(slurm, "partition", "partition", &s->partition);
  ReadName(slurm, "account", "account", &s->account);
  ReadName(slurm, "qos", "QOS", &s->qos);
  std::string time;
  if (const toml::node* node = slurm.String("time_limit", &time); node != nullptr) {
    if (IsSlurmTime(time)) {
      s->time_limit = std::move(time);
    } else {
      slurm.Report(*node, "time_limit",
                   "must be a Slurm time such as \"90\" (minutes), \"4:00:00\" or \"2-12:00:00\", "
                   "got \"" + time + "\"");
    }
  }
  ReadOptions(slurm, &s->options);
  if (cluster.Failed("scheduler")) return;
  if (c->scheduler != Scheduler::kSlurm) {
    for (const std::string_view key : {"partition", "account", "time_limit", "qos", "options"}) {
      if (const toml::node* node = slurm.Find(key); node != nullptr && !slurm.Failed(key)) {
        slurm.Report(*node, key, "applies only to jobs with cluster.scheduler = \"slurm\"");
      }
    }
    return;
  }
  for (const std::string_view key : {"hosts", "placement"}) {
    if (const toml::node* node = cluster.Find(key); node != nullptr) {
      cluster.Report(*node, key,
                     "cannot be set with scheduler = \"slurm\": Slurm chooses the nodes (ask it "
                     "with slurm.partition or slurm.options)");
    }
  }
}

void WriteSlurm(const SlurmConfig& s, TomlWriter& w) {
  w.Section("slurm");
  if (!s.partition.empty()) w.String("partition", s.partition);
  if (!s.account.empty()) w.String("account", s.account);
  if (!s.time_limit.empty()) w.String("time_limit", s.time_limit);
  if (!s.qos.empty()) w.String("qos", s.qos);
  if (!s.options.empty()) w.StringArray("options", s.options);
}

}  // namespace dtrain::config::internal
