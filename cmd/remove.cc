// dtrain rm and dtrain prune: delete ended jobs, and everything they recorded, from the daemon's
// store or (--db) a store file; the store gives the space back.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <iostream>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/exit_codes.h"
#include "cmd/human.h"
#include "cmd/json_fields.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "daemon/store/job_removal.h"

namespace dtrain::cli {
namespace {

struct RemoveArgs {
  std::vector<std::int64_t> jobs;
  std::string db;  // empty: the daemon's store
  bool json = false;
};

struct PruneArgs {
  std::string older_than;
  std::vector<std::string> states;
  std::string db;  // empty: the daemon's store
  bool dry_run = false;
  bool json = false;
};

// What was removed, as the daemon's rm and prune replies say it.
struct Removal {
  nlohmann::json removed = nlohmann::json::array();  // RemovedJobJson objects
  std::uint64_t reclaimed = 0;
  bool dry_run = false;
};

void PrintRemoval(const Removal& r, bool json) {
  if (json) {
    std::cout << nlohmann::json{{"removed", r.removed},
                                {"reclaimed", r.reclaimed},
                                {"dry_run", r.dry_run}}
                     .dump()
              << std::endl;
    return;
  }
  for (const nlohmann::json& job : r.removed) {
    std::cout << (r.dry_run ? "would remove job " : "removed job ") << JsonInt(job, "id") << " ("
              << JsonString(job, "name") << ", " << JsonString(job, "state") << ")\n";
  }
  if (r.dry_run) {
    std::cout << r.removed.size() << " job(s) would be removed (dry run)\n";
  } else {
    std::cout << r.removed.size() << " job(s) removed; the store gave back "
              << FormatBytes(static_cast<std::int64_t>(r.reclaimed)) << '\n';
  }
}

// Adds a daemon's rm or prune reply to `r`.
void AddReply(const nlohmann::json& reply, Removal& r) {
  const auto removed = reply.find("removed");
  if (removed != reply.end() && removed->is_array()) {
    for (const nlohmann::json& job : *removed) r.removed.push_back(job);
  }
  r.reclaimed += static_cast<std::uint64_t>(std::max<std::int64_t>(0, JsonInt(reply, "reclaimed")));
}

// Deletes job `id` of a store file: one left unended by a process that is gone is recorded
// cancelled first; one a live process runs is refused.
CliResult<store::JobRecord> RemoveStoredJob(store::Store& store, std::int64_t id,
                                            const std::string& db) {
  CliResult<store::JobRecord> job = StoredJob(store, id, db);
  if (!job.ok()) return job;
  if (!store::IsTerminal(job.value().state)) {
    if (Status gone = RecordGoneWorkers(store, id); !gone.ok()) {
      return CliError{kExitFailed, gone.message() + ": stop it (Ctrl-C) first", "conflict", {}};
    }
    Status ended = store.SetJobState(id, store::JobState::kCancelled,
                                     "its process is gone; removed by the user");
    if (!ended.ok()) return ErrorFrom(ended);
  }
  auto deleted = store.DeleteJob(id);
  if (!deleted.ok()) return ErrorFrom(deleted.status());
  return std::move(deleted).value();
}

// The space a store file's deletions left, given back; an error is only reported.
std::uint64_t ReclaimStore(store::Store& store) {
  auto reclaimed = store.Reclaim();
  if (reclaimed.ok()) return reclaimed.value();
  PrintError(reclaimed.status().message());
  return 0;
}

int Remove(const RemoveArgs& args, const GlobalOptions& globals) {
  Removal removal;
  int code = kExitOk;
  auto failed = [&code](const CliError& error) {
    const int c = Report(error);
    if (code == kExitOk) code = c;
  };
  if (!args.db.empty()) {
    CliResult<std::unique_ptr<store::Store>> store = OpenExistingStore(args.db);
    if (!store.ok()) return Report(store.error());
    for (const std::int64_t id : args.jobs) {
      CliResult<store::JobRecord> removed = RemoveStoredJob(*store.value(), id, args.db);
      if (removed.ok()) {
        removal.removed.push_back(store::RemovedJobJson(removed.value()));
      } else {
        failed(removed.error());
      }
    }
    if (!removal.removed.empty()) removal.reclaimed = ReclaimStore(*store.value());
  } else {
    CliResult<DaemonClient> client = DaemonClient::Connect(globals);
    if (!client.ok()) return Report(client.error());
    for (const std::int64_t id : args.jobs) {
      CliResult<nlohmann::json> reply = client.value().Request({{"type", "rm"}, {"id", id}});
      if (reply.ok()) {
        AddReply(reply.value(), removal);
      } else {
        failed(reply.error());
      }
    }
  }
  if (!removal.removed.empty() || args.json) PrintRemoval(removal, args.json);
  return code;
}

// "90s", "30m", "12h", "30d", "2w" in seconds; nullopt for anything else.
std::optional<double> ParseAge(const std::string& text) {
  std::size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!std::isfinite(number) || number < 0 || used + 1 != text.size()) return std::nullopt;
  switch (text.back()) {
    case 's': return number;
    case 'm': return number * 60;
    case 'h': return number * 3600;
    case 'd': return number * 86400;
    case 'w': return number * 7 * 86400;
    default: return std::nullopt;
  }
}

int Prune(const PruneArgs& args, const GlobalOptions& globals) {
  const std::optional<double> age = ParseAge(args.older_than);
  if (!age) {
    PrintError("--older-than: '" + args.older_than +
               "' is not an age; give a number and a unit: 90s, 30m, 12h, 30d, 2w");
    return kExitUsage;
  }
  store::PruneFilter filter;
  for (const std::string& name : args.states) {
    Result<store::JobState> state = store::ParseEndedState(name);
    if (!state.ok()) {
      PrintError("--state: " + state.status().message());
      return kExitUsage;
    }
    filter.states.push_back(state.value());
  }
  Removal removal;
  removal.dry_run = args.dry_run;
  if (args.db.empty()) {
    CliResult<DaemonClient> client = DaemonClient::Connect(globals);
    if (!client.ok()) return Report(client.error());
    CliResult<nlohmann::json> reply = client.value().Request({{"type", "prune"},
                                                              {"older_than", *age},
                                                              {"states", args.states},
                                                              {"dry_run", args.dry_run}});
    if (!reply.ok()) return Report(reply.error());
    AddReply(reply.value(), removal);
    PrintRemoval(removal, args.json);
    return kExitOk;
  }
  CliResult<std::unique_ptr<store::Store>> store = OpenExistingStore(args.db);
  if (!store.ok()) return Report(store.error());
  filter.before =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
      *age;
  if (::getuid() != 0) filter.owner = static_cast<std::int64_t>(::getuid());
  auto jobs = store.value()->ListJobs();
  if (!jobs.ok()) return Report(ErrorFrom(jobs.status()));
  for (const store::JobRecord& job : jobs.value()) {
    if (!store::Prunable(job, filter)) continue;
    if (!args.dry_run) {
      auto deleted = store.value()->DeleteJob(job.id);
      if (!deleted.ok()) return Report(ErrorFrom(deleted.status()));
    }
    removal.removed.push_back(store::RemovedJobJson(job));
  }
  if (!args.dry_run && !removal.removed.empty()) removal.reclaimed = ReclaimStore(*store.value());
  PrintRemoval(removal, args.json);
  return kExitOk;
}

}  // namespace

void AddRemoveAndPruneCommands(CLI::App& app, Globals globals, int& exit_code) {
  auto rm = std::make_shared<RemoveArgs>();
  CLI::App* rm_cmd = app.add_subcommand(
      "rm", "Delete ended jobs and all they recorded from the store; it gives the space back");
  rm_cmd->add_option("job", rm->jobs, "The job ids")->required();
  rm_cmd->add_option("--db", rm->db, "Delete from this store file instead of the daemon's")
      ->type_name("PATH");
  rm_cmd->add_flag("--json", rm->json, "Print {\"removed\": [...], \"reclaimed\": BYTES}");
  rm_cmd->callback([rm, globals, &exit_code] { exit_code = Remove(*rm, *globals); });

  auto prune = std::make_shared<PruneArgs>();
  CLI::App* prune_cmd = app.add_subcommand(
      "prune", "Delete your ended jobs older than an age (root: everyone's); the store shrinks");
  prune_cmd
      ->add_option("--older-than", prune->older_than,
                   "Jobs that ended (last changed) longer ago than this: 12h, 30d, 2w")
      ->type_name("AGE")
      ->required();
  prune_cmd
      ->add_option("--state", prune->states,
                   "Only jobs in this state: succeeded, failed, cancelled (repeat it or give a "
                   "comma list; default: all three)")
      ->type_name("STATE")
      ->delimiter(',');
  prune_cmd->add_option("--db", prune->db, "Prune this store file instead of the daemon's")
      ->type_name("PATH");
  prune_cmd->add_flag("--dry-run", prune->dry_run, "List what would be removed, remove nothing");
  prune_cmd->add_flag("--json", prune->json,
                      "Print {\"removed\": [...], \"reclaimed\": BYTES, \"dry_run\": BOOL}");
  prune_cmd->callback([prune, globals, &exit_code] { exit_code = Prune(*prune, *globals); });
}

}  // namespace dtrain::cli
