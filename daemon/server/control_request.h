// The pure part of the control server (daemon/control_protocol.md): a control frame's payload
// turned into a request, typed fields read out of it, a worker's metrics frame parsed, and the
// rows a logs request keeps (what each request type is: request_table.h). No I/O and no daemon
// state, so that every byte a client can send reaches these functions in
// tests/fuzz/control_request_fuzz.cc exactly as it reaches them in dtraind.
//
//   ParsedRequest r = ParseControlRequest(frame.payload);
//   if (r.verdict == ParsedRequest::Verdict::kClose) close the connection;
//   std::optional<std::int64_t> id = IntField(r.request, "id");
//
// Never throws on any input. Safe for concurrent use.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/train/metrics.h"
#include "daemon/store/records.h"

namespace dtrain::server {

// A field of a JSON object; nullopt (false) when `j` is not an object, the field is absent or of
// another type.
std::optional<std::int64_t> IntField(const nlohmann::json& j, const char* key);
std::optional<std::string> StringField(const nlohmann::json& j, const char* key);
std::optional<double> NumberField(const nlohmann::json& j, const char* key);
bool BoolField(const nlohmann::json& j, const char* key);
// A list of strings (a resume's `set`, a list's `tags`): empty when absent; nullopt when `j` is not
// an object, or the field is not an array of strings.
std::optional<std::vector<std::string>> StringsField(const nlohmann::json& j, const char* key);

// What the server makes of one control frame's payload.
struct ParsedRequest {
  enum class Verdict {
    kClose,       // not a JSON object: close the connection without a reply
    kBadVersion,  // an object without "v": 1: reply kUnsupportedVersion, then close
    kRequest,     // a request: `request` holds the object, `type` its "type" ("" if none)
  };
  Verdict verdict = Verdict::kClose;
  nlohmann::json request;
  std::string type;
};
ParsedRequest ParseControlRequest(std::string_view payload);

inline constexpr std::string_view kUnsupportedVersion =
    "unsupported message version; this daemon speaks \"v\": 1";

// A worker's metrics frame: {"points": [{"step", "epoch", "name", "value"}...]}; nullopt when
// malformed (the connection closes).
std::optional<std::vector<train::MetricPoint>> ParseMetricPoints(std::string_view payload);

// The rows of `rows` a logs request keeps (those of `worker` when given, at or after `since`,
// the last `tail` when given; a negative tail keeps none); advances *after past every row read.
std::vector<store::LogRow> SelectLines(std::vector<store::LogRow>& rows, std::int64_t* after,
                                       std::optional<std::int64_t> worker, double since,
                                       std::optional<std::int64_t> tail);

}  // namespace dtrain::server
