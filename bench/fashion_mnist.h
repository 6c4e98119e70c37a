// What the benchmarks train: the Fashion-MNIST training set as shipped by Debian's
// dataset-fashion-mnist package (scripts/install-deps installs it; a benchmark exits with a
// message if it is absent), and the MLPs they time on it.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "core/data/readers.h"
#include "core/model/spec.h"

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

// MLP 784-<hidden...>-10, ReLU, softmax cross-entropy.
inline model::ModelSpec FashionMlp(std::vector<int> hidden) {
  model::ModelSpec spec;
  spec.type = model::ModelType::kMlp;
  spec.inputs = 784;
  spec.hidden = std::move(hidden);
  spec.outputs = 10;
  return spec;
}

// The network of examples/fashion-mnist-cnn.toml, by its spec text.
inline model::ModelSpec FashionCnn() {
  return model::ParseModelSpec(
             "sequential inputs=784 outputs=10 shape=1x28x28 loss=softmax_xent init=auto "
             "layer=conv2d,filters=32,kernel=5,stride=1,padding=same,activation=relu "
             "layer=maxpool2d,size=2,stride=2 "
             "layer=conv2d,filters=64,kernel=5,stride=1,padding=same,activation=relu "
             "layer=maxpool2d,size=2,stride=2 layer=dense,units=128,activation=relu "
             "layer=dropout,rate=0.3 layer=dense,units=10,activation=identity")
      .value();
}

}  // namespace dtrain::bench
