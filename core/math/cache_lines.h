// DropFromCaches: asks the CPU to drop the cache lines of a range from every cache, so that a
// core about to write them (another thread's next step) finds no copy to invalidate first.
//
//   DropFromCaches({params + other.begin, other.end - other.begin});  // lines I only read
//
// Why: when both cores of a split batch have read every parameter, each core's write of its
// half waits on the other core's copies, line after line; dropping the lines a thread read but
// will not write lets those invalidations run in parallel, ahead of the write (bench_shared_lines,
// bench/README.md). Dirty lines are written back first, so no data is lost whoever calls it. Uses
// CLFLUSHOPT where the CPU has it (x86-64 since 2015); elsewhere it does nothing. Thread-safe.
#pragma once

#include <span>

namespace dtrain::math {

void DropFromCaches(std::span<const float> range);

}  // namespace dtrain::math
