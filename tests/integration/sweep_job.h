// The job the integration tests' sweeps vary: a tiny softmax model on generated data (400 rows
// of 4 features, 100 held out, 2 classes), trained for `steps` steps, each logged and
// checkpointed, evaluated at its last step and, when `eval_every` > 0, every `eval_every` steps;
// the sweep's own table (`sweep`: "[sweep] ...") after it. One text, so that every sweep test
// trains the same job.
//
//   const std::string file = dir.Write("grid.toml", SweepFile(kGrid, 12, 3));
#pragma once

#include <string>

namespace dtrain::testing {

inline std::string SweepFile(const std::string& sweep, int steps, int eval_every = 0) {
  std::string text = R"(name = "sw"
[data]
format = "synthetic"
rows = 400
test_rows = 100
features = 4
classes = 2
[model]
type = "softmax"
[train]
steps = )" + std::to_string(steps) +
                     R"(
epochs = 0
batch_size = 16
threads = 1
log_every = 1
)";
  if (eval_every > 0) text += "eval_every = " + std::to_string(eval_every) + "\n";
  return text + "[checkpoint]\nevery_steps = 1\n" + sweep;
}

}  // namespace dtrain::testing
