#include "cmd/choices.h"

#include <CLI/CLI.hpp>

namespace dtrain::cli {

CLI::Option* Choices(CLI::Option* option, const std::vector<std::string>& values) {
  std::string listed;
  for (const std::string& v : values) listed += (listed.empty() ? "" : ",") + v;
  return option->check(CLI::IsMember(values).description("{" + listed + "}").name(kChoicesValidator));
}

std::vector<std::string> ChoicesOf(CLI::Option& option) {
  std::string listed;
  try {
    listed = option.get_validator(kChoicesValidator)->get_description();
  } catch (const CLI::OptionNotFound&) {
    return {};  // an option without a list
  }
  std::vector<std::string> values;
  if (listed.size() < 2) return values;
  listed = listed.substr(1, listed.size() - 2);  // without the braces
  for (std::size_t begin = 0, end; begin <= listed.size(); begin = end + 1) {
    end = std::min(listed.find(',', begin), listed.size());
    values.push_back(listed.substr(begin, end - begin));
  }
  return values;
}

}  // namespace dtrain::cli
