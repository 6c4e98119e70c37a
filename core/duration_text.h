// How a duration reads in dtrain's messages: "250 ms", whole milliseconds rounded up (a timeout
// of 1.2 ms is "2 ms": never less than was waited).
//
//   Status::Error("no frame within " + Ms(timeout));
//
// Pure; safe for concurrent use.
#pragma once

#include <chrono>
#include <string>

namespace dtrain {

template <typename Rep, typename Period>
std::string Ms(std::chrono::duration<Rep, Period> d) {
  return std::to_string(std::chrono::ceil<std::chrono::milliseconds>(d).count()) + " ms";
}

}  // namespace dtrain
