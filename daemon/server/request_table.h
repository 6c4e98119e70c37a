// The control protocol's request types (daemon/control_protocol.md) and what each one is: who
// may send it, whether a TCP caller without the cluster key may (a query), the field it must
// carry, whether it acts for a user, and whether only the job's owner (or root) may send it.
// The one place these facts live: the server's dispatch reads them, and picks each type's
// handler by its `kind` (a switch that the compiler checks covers every kind).
//
//   const RequestRow* row = FindRequest(type);            // null: no such request type
//   if (auto problem = MissingField(*row, request)) reply bad_request *problem;
//
// Invariants: one row per type, in RequestKind's order; only a client's request is a query,
// acts for a user or is owner-only, and an owner-only request acts for a user and needs "id".
// Pure data and functions: no I/O, never throws, safe for concurrent use.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dtrain::server {

enum class RequestKind {
  kVersion,
  kSubmit,
  kStatus,
  kList,
  kCancel,
  kResume,
  kRm,
  kPrune,
  kWait,
  kLogs,
  kMetrics,
  kCheckpoints,
  kNodes,
  kWhy,
  kCheckpoint,
  kSettings,
  kNodeHeartbeat,
  kSweepSubmit,
  kSweepStatus,
  kSweepCancel,
  kSweepBest,
  kSweepList,
  kSpawnWorker,
  kWorkerChannel,
  kWorkerHello,
};

// Who may send a request of a type.
enum class Sender {
  kClient,      // any caller but a worker channel; a caller without the key: queries only
  kKeyHolder,   // a TCP caller that proved the cluster key (a peer daemon's stand-in)
  kTcpCaller,   // any TCP caller: a peer daemon, or a Slurm task without the key
  kWorker,      // a worker, on the worker channel its daemon gave it, and nothing else there
};

struct RequestRow {
  RequestKind kind;
  std::string_view type;
  Sender sender;
  bool query;          // a caller without the cluster key (over TCP) may send it
  bool acts_for_user;  // the caller's uid matters: over TCP with the key, the "uid" it names
  bool needs_id;       // it names a job (a sweep for sweep_*): "id", an integer
  // Non-empty: only the job's owner or root may send it; what they may do ("export").
  std::string_view owner_only;
};

// Every row, in RequestKind's order.
std::span<const RequestRow> RequestTable();

// The row of request type `type`; null when there is none.
const RequestRow* FindRequest(std::string_view type);

// The bad_request message for a request of `row`'s type that lacks the field it needs ("status
// needs \"id\" (an integer)"); nullopt when it has it.
std::optional<std::string> MissingField(const RequestRow& row, const nlohmann::json& request);

}  // namespace dtrain::server
