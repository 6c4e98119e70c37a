// The Fashion-MNIST training set as shipped by Debian's dataset-fashion-mnist package, for the
// benchmarks (scripts/install-deps installs it). Exits the benchmark with a message if absent.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "core/data/readers.h"

namespace dtrain::bench {

inline constexpr const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

inline data::Dataset LoadFashionTrain() {
  const std::string dir = kFashionDir;
  auto set = data::ReadIdx(dir + "/train-images-idx3-ubyte.gz", dir + "/train-labels-idx1-ubyte.gz");
  if (!set.ok()) {
    std::fprintf(stderr, "%s (install dataset-fashion-mnist)\n", set.status().message().c_str());
    std::exit(1);
  }
  return std::move(set).value();
}

}  // namespace dtrain::bench
