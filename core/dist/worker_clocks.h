// WorkerClocks: the clocks of a parameter-server shard's workers, as both shard kinds keep them
// (parameter_shard.h, "Clocks and staleness"; sparse_shard.h). Per worker its clock (pushes
// applied, or steps pushed in sync), whether it has said goodbye (departed) or its link broke and
// it may come back (absent); and the global clock g, the least clock of the workers present,
// which never decreases (with none present it keeps its value).
//
//   WorkerClocks clocks(4);
//   Result<std::uint64_t> staleness = clocks.Staleness(h.clock, h.basis, max_staleness);
//   clocks.Advance(rank);                       // its push applied: g may move
//   clocks.Behind(need);                        // "worker rank 2 at clock 7, ..."
//
// Plain value: the owner guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace dtrain::dist {

class WorkerClocks {
 public:
  explicit WorkerClocks(std::size_t workers = 0);

  // Every worker present, at `clocks` (one each), and g recomputed from 0.
  void Start(std::span<const std::uint64_t> clocks);
  std::uint64_t clock(std::size_t w) const { return clocks_[w]; }
  const std::vector<std::uint64_t>& clocks() const { return clocks_; }
  std::uint64_t global() const { return global_; }
  bool absent(std::size_t w) const { return absent_[w]; }
  bool AllDeparted() const;

  void Advance(std::size_t w) { SetClock(w, clocks_[w] + 1); }
  void SetClock(std::size_t w, std::uint64_t clock);
  void Depart(std::size_t w);
  void SetAbsent(std::size_t w, bool absent);
  // Sync shards, whose g is the steps applied rather than a least clock.
  void SetGlobal(std::uint64_t g) { global_ = g; }

  // The staleness c - basis of a push at clock c computed from parameters of global clock
  // `basis`; an error when the shard never replied that basis (basis > g or > c), or when the
  // push is staler than max_staleness > 0.
  Result<std::uint64_t> Staleness(std::uint64_t clock, std::uint64_t basis,
                                  int max_staleness) const;
  // The workers present (neither departed nor absent) whose clock is below `need`, as
  // "worker rank R at clock C, ..." (why g has not reached `need`).
  std::string Behind(std::uint64_t need) const;

 private:
  void Recompute();

  std::vector<std::uint64_t> clocks_;
  std::vector<bool> departed_;
  std::vector<bool> absent_;
  std::uint64_t global_ = 0;
};

}  // namespace dtrain::dist
