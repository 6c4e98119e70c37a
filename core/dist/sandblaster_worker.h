// RunSandblasterWorker: a Sandblaster worker's whole run (sandblaster_protocol.md). It tells the
// coordinator it is ready, then follows its orders: on a pass it has not seen, it fetches the
// pass's point from every shard; it computes each unit it is given into a scratch gradient and
// reports the unit's loss; the verdict that comes with its next order adds the scratch to its
// accumulator (or not) and may first drop the accumulator; on a flush order it pushes the
// accumulator (each shard its slice, each acknowledging) and reports the loss it carried. On the
// order to stop it says goodbye to the shards and the coordinator.
//
//   Status s = RunSandblasterWorker(coordinator, shards, {.rank = r, .num_params = n},
//       [&](std::span<const float> x, std::size_t first, std::size_t last, std::span<float> g) {
//         return objective.AccumulateRows(x, first, last, g);
//       });
//
// Any failed link is an error (the coordinator then treats this worker as lost). One thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>

#include "core/dist/link.h"
#include "core/model/loss.h"
#include "core/status.h"

namespace dtrain::dist {

struct SandblasterWorkerOptions {
  int rank = 0;
  std::size_t num_params = 0;
  std::chrono::milliseconds timeout{60'000};  // each fetch, push and report
};

// The loss sum over rows [first, last) of the objective's row list; their gradient sum is added
// to `grad_sum`.
using UnitFunction = std::function<model::LossValue(std::span<const float> params,
                                                    std::size_t first, std::size_t last,
                                                    std::span<float> grad_sum)>;

Status RunSandblasterWorker(Link& coordinator, std::span<Link* const> shards,
                            const SandblasterWorkerOptions& options, const UnitFunction& unit);

}  // namespace dtrain::dist
