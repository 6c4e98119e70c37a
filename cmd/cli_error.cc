#include "cmd/cli_error.h"

#include <iostream>

#include "cmd/terminal.h"

namespace dtrain::cli {

CliError ErrorFrom(const Status& status, int exit_code) {
  return CliError{exit_code, status.message(), "", {}};
}

void PrintDiagnostics(const std::vector<config::Diagnostic>& diagnostics,
                      const std::string& source) {
  for (const config::Diagnostic& d : diagnostics) std::cerr << Printable(config::FormatDiagnostic(d)) << '\n';
  std::cerr << diagnostics.size() << (diagnostics.size() == 1 ? " problem" : " problems") << " in "
            << source << '\n';
}

int Report(const CliError& error) {
  PrintError(error.message);
  for (const config::Diagnostic& d : error.diagnostics)
    std::cerr << Printable(config::FormatDiagnostic(d)) << '\n';
  return error.exit_code;
}

}  // namespace dtrain::cli
