#include "daemon/server/request_table.h"

#include <algorithm>
#include <array>

#include "daemon/server/control_request.h"

namespace dtrain::server {
namespace {

using K = RequestKind;
using S = Sender;

constexpr std::string_view kReadLogs = "read the logs of";

// Columns: kind, type, sender, query, acts for a user, needs "id", owner only.
// clang-format off
constexpr std::array kRows{
    RequestRow{K::kVersion,       "version",        S::kClient,    true,  false, false, {}},
    RequestRow{K::kSubmit,        "submit",         S::kClient,    false, true,  false, {}},
    RequestRow{K::kStatus,        "status",         S::kClient,    true,  false, true,  {}},
    RequestRow{K::kList,          "list",           S::kClient,    true,  false, false, {}},
    RequestRow{K::kCancel,        "cancel",         S::kClient,    false, true,  true,  {}},
    RequestRow{K::kResume,        "resume",         S::kClient,    false, true,  true,  {}},
    RequestRow{K::kRm,            "rm",             S::kClient,    false, true,  true,  {}},
    RequestRow{K::kPrune,         "prune",          S::kClient,    false, true,  false, {}},
    RequestRow{K::kWait,          "wait",           S::kClient,    true,  false, true,  {}},
    RequestRow{K::kLogs,          "logs",           S::kClient,    true,  true,  true,  kReadLogs},
    RequestRow{K::kMetrics,       "metrics",        S::kClient,    true,  false, true,  {}},
    RequestRow{K::kCheckpoints,   "checkpoints",    S::kClient,    true,  false, true,  {}},
    RequestRow{K::kNodes,         "nodes",          S::kClient,    true,  false, false, {}},
    RequestRow{K::kWhy,           "why",            S::kClient,    false, true,  true,  kReadLogs},
    RequestRow{K::kCheckpoint,    "checkpoint",     S::kClient,    true,  true,  true,  "export"},
    RequestRow{K::kSettings,      "settings",       S::kClient,    true,  true,  true,  "read the settings of"},
    RequestRow{K::kNodeHeartbeat, "node_heartbeat", S::kClient,    false, false, false, {}},
    RequestRow{K::kSweepSubmit,   "sweep_submit",   S::kClient,    false, true,  false, {}},
    RequestRow{K::kSweepStatus,   "sweep_status",   S::kClient,    true,  true,  true,  {}},
    RequestRow{K::kSweepCancel,   "sweep_cancel",   S::kClient,    false, true,  true,  {}},
    RequestRow{K::kSweepBest,     "sweep_best",     S::kClient,    true,  true,  true,  {}},
    RequestRow{K::kSweepList,     "sweep_list",     S::kClient,    true,  true,  false, {}},
    RequestRow{K::kSpawnWorker,   "spawn_worker",   S::kKeyHolder, false, false, false, {}},
    RequestRow{K::kWorkerChannel, "worker_channel", S::kTcpCaller, false, false, false, {}},
    RequestRow{K::kWorkerHello,   "worker_hello",   S::kWorker,    false, false, false, {}},
};
// clang-format on

constexpr bool InKindOrder() {
  for (std::size_t i = 0; i < kRows.size(); ++i) {
    if (static_cast<std::size_t>(kRows[i].kind) != i) return false;
  }
  return true;
}
static_assert(InKindOrder(), "kRows lists each RequestKind once, in order");

}  // namespace

std::span<const RequestRow> RequestTable() { return kRows; }

const RequestRow* FindRequest(std::string_view type) {
  const auto it = std::find_if(kRows.begin(), kRows.end(),
                               [type](const RequestRow& row) { return row.type == type; });
  return it == kRows.end() ? nullptr : &*it;
}

std::optional<std::string> MissingField(const RequestRow& row, const nlohmann::json& request) {
  if (row.needs_id && !IntField(request, "id")) {
    return std::string(row.type) + " needs \"id\" (an integer)";
  }
  return std::nullopt;
}

}  // namespace dtrain::server
