// Fuzz target: the daemon's control-request parser (daemon/server/control_request.h and
// request_table.h), fed what a client may put in a control frame's payload. Each input goes
// through ParseControlRequest and, when it is a request, through every field lookup the server's
// dispatch does for its type (its row, the bad_request check, each handler's fields, the logs
// row selection); the same bytes are also parsed as a worker's metrics frame, and the error
// replies the server would build from them must serialise. Invariants: no crash, no leak, no
// exception.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/server/control_request.h"
#include "daemon/server/request_table.h"
#include "daemon/store/records.h"

namespace {

using dtrain::server::ParsedRequest;
using json = nlohmann::json;

// Every field a request handler of the control server reads, by the lookup it reads it with.
void ReadFields(const json& request) {
  using namespace dtrain::server;
  for (const char* key : {"id", "priority", "limit", "after", "worker", "tail", "step", "job",
                          "rank", "data_port", "partition_port", "steps", "uid", "gid",
                          "memory_limit"}) {
    (void)IntField(request, key);
  }
  for (const char* key : {"type", "job_toml", "source", "name", "state", "token", "data_host",
                          "coordinator", "stop", "error"}) {
    (void)StringField(request, key);
  }
  (void)NumberField(request, "since");
  (void)BoolField(request, "follow");
  if (auto state = StringField(request, "state")) (void)dtrain::store::ParseJobState(*state);
}

// The logs handler's row selection over a few rows, with the request's own fields.
void SelectFromRequest(const json& request) {
  using namespace dtrain::server;
  std::vector<dtrain::store::LogRow> rows;
  for (int i = 0; i < 5; ++i) {
    rows.push_back({.id = i + 1, .worker = i % 2, .stream = "stdout", .time = 10.0 * i,
                    .line = "line " + std::to_string(i)});
  }
  std::int64_t after = IntField(request, "after").value_or(0);
  const std::vector<dtrain::store::LogRow> kept =
      SelectLines(rows, &after, IntField(request, "worker"),
                  NumberField(request, "since").value_or(0.0), IntField(request, "tail"));
  if (kept.size() > 5 || after != 5) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dtrain::server;
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  const ParsedRequest parsed = ParseControlRequest(payload);
  if (parsed.verdict == ParsedRequest::Verdict::kRequest) {
    const json& request = parsed.request;
    if (!request.is_object()) __builtin_trap();
    const RequestRow* row = FindRequest(parsed.type);
    const std::optional<std::string> missing =
        row != nullptr ? MissingField(*row, request) : std::nullopt;
    ReadFields(request);
    if (parsed.type == "logs" && !missing) SelectFromRequest(request);
    // The replies built from request text: an unknown type and a missing field.
    const std::string unknown = "unknown request type '" + parsed.type + "'";
    (void)json({{"v", 1}, {"ok", false}, {"code", "bad_request"}, {"error", unknown}}).dump();
    if (missing) (void)json({{"error", *missing}}).dump();
  }
  if (auto points = ParseMetricPoints(payload)) {
    for (const dtrain::train::MetricPoint& p : *points) (void)json({{"name", p.name}}).dump();
  }
  return 0;
}
