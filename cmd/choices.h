// Options whose value is one of a fixed list: CLI11 refuses any other value, and the completion
// scripts (`dtrain completion`) offer the list, both from the one list given here.
//
//   Choices(cmd->add_option("--format", args->format, "Output format"), {"table", "csv", "json"});
//   ChoicesOf(*option);  // {"table", "csv", "json"}; empty for an option without a list
//
// The list travels in a CLI11 validator named kChoicesValidator, whose description ("{a,b,c}",
// as --help shows it) ChoicesOf reads back; the values may not hold ',', '{' or '}'.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class Option;
}

namespace dtrain::cli {

inline constexpr const char* kChoicesValidator = "choices";

// Restricts `option` to `values`; returns it, for chaining.
CLI::Option* Choices(CLI::Option* option, const std::vector<std::string>& values);

std::vector<std::string> ChoicesOf(CLI::Option& option);

}  // namespace dtrain::cli
