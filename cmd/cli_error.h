// CliError and CliResult<T>: a failed step of a subcommand as a value that already knows its
// exit code (exit_codes.h), so every command ends with the right code and one clear message.
// Errors from the daemon keep the reply's code ("not_found", ...) and diagnostics.
//
//   CliResult<nlohmann::json> reply = client.Request({{"type", "status"}, {"id", 3}});
//   if (!reply.ok()) return Report(reply.error());   // prints it, returns e.g. kExitNotFound
//
// Plain values; safe to copy between threads. Report writes to stderr.
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cmd/exit_codes.h"
#include "config/job.h"
#include "core/status.h"

namespace dtrain::cli {

struct CliError {
  int exit_code = kExitFailed;
  std::string message;
  std::string code;  // the daemon's error code; empty for an error found by the CLI itself
  std::vector<config::Diagnostic> diagnostics;  // an invalid job's problems, all of them
};

// Holds either a T or a CliError. value() may only be called when ok().
template <typename T>
class CliResult {
 public:
  CliResult(T value) : state_(std::move(value)) {}         // NOLINT: implicit by design
  CliResult(CliError error) : state_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(state_); }
  const CliError& error() const { return std::get<CliError>(state_); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

 private:
  std::variant<T, CliError> state_;
};

// A library Status as a CliError with the given exit code.
CliError ErrorFrom(const Status& status, int exit_code = kExitFailed);

// "file:line:col: key: message" per problem, then "N problems in SOURCE", on stderr.
void PrintDiagnostics(const std::vector<config::Diagnostic>& diagnostics,
                      const std::string& source);

// Prints the error (its message, then its diagnostics) on stderr and returns its exit code.
int Report(const CliError& error);

}  // namespace dtrain::cli
