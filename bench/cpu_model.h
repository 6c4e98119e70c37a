// The CPU a benchmark ran on, as /proc/cpuinfo's first "model name" says: every figure is printed
// beside it (bench/README.md).
#pragma once

#include <fstream>
#include <string>

namespace dtrain::bench {

inline std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    const std::size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "unknown";
}

}  // namespace dtrain::bench
