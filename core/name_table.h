// NameTable: the one two-way table between an enum and its configuration names, behind each
// *Name / Parse* / *Choices function in dtrain (model types, optimizers, job states, ...).
//
//   constexpr NameTable<ScheduleType, 2> kTypes{{{{ScheduleType::kConstant, "constant"}, ...}},
//                                               "constant, ..."};
//   Result<ScheduleType> t = kTypes.Parse("cosine", "schedule");  // error lists the choices
//
// Tables are constexpr data: safe for concurrent use.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "core/status.h"

namespace dtrain {

template <typename E, std::size_t N>
struct NameTable {
  std::array<std::pair<E, std::string_view>, N> entries;
  std::string_view choices;  // the names, in table order, joined by ", "

  std::string_view Name(E value) const {
    for (const auto& [e, name] : entries) {
      if (e == value) return name;
    }
    return "?";
  }

  // `what` names the setting in the error, e.g. "unknown optimizer 'rmsprop' (allowed: ...)".
  Result<E> Parse(std::string_view name, std::string_view what) const {
    for (const auto& [e, n] : entries) {
      if (n == name) return e;
    }
    return Status::Error("unknown " + std::string(what) + " '" + std::string(name) +
                         "' (allowed: " + std::string(choices) + ")");
  }
};

}  // namespace dtrain
