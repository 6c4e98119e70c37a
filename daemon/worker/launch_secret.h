// ReadLaunchSecret: what a job's process is told at its start that must not show on its command
// line or in its environment (launch.h): one JSON object on its standard input, read to EOF.
//
//   Result<nlohmann::json> secret = ReadLaunchSecret();   // {"token": "...", ...}
//   std::optional<std::string> token = SecretString(secret.value(), "token");
//
// Reads at most 4 KiB; standard input is /dev/null afterwards. One call per process.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"

namespace dtrain::worker {

Result<nlohmann::json> ReadLaunchSecret();

// The string field `name` of the secret, if it has one.
std::optional<std::string> SecretString(const nlohmann::json& secret, const char* name);

}  // namespace dtrain::worker
