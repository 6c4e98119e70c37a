// WorkDispatcher: the Sandblaster coordinator's side of its workers (sandblaster_protocol.md).
// For each pass it cuts the objective's rows into work units and hands them out as WorkUnits
// decides (free workers first, backups near the end, revoked units again), delivering each
// verdict with the worker's next order, and counts the loss of every unit whose gradient reached
// the shards.
//
//   WorkDispatcher workers(worker_links, {.units = 40, .backup_after = 0.8, .rows = rows});
//   Result<PassTotals> totals = workers.RunPass(pass);     // after the shards began the pass
//   workers.Stop();
//
// A thread per worker reads its link into one event queue. A worker whose link fails (it died,
// or was killed for a stalled heartbeat) is lost for the rest of the run: its units go to the
// others (LostWorkers() names it, for the log); with every worker lost RunPass fails. A worker
// lost while pushing makes the pass start over (PassTotals::restart). One thread calls RunPass
// and Stop.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/dist/link.h"
#include "core/dist/sandblaster_messages.h"
#include "core/dist/sharded_vectors.h"

namespace dtrain::dist {

struct DispatchOptions {
  int units = 1;            // work units per pass
  double backup_after = 1;  // WorkUnits' threshold; 1: no backups
  std::size_t rows = 0;     // the objective's rows, cut into `units` contiguous ranges
  std::chrono::milliseconds timeout{60'000};
};

class WorkDispatcher {
 public:
  WorkDispatcher(std::vector<Link*> workers, DispatchOptions options);
  ~WorkDispatcher();  // closes the links, joins the readers
  WorkDispatcher(const WorkDispatcher&) = delete;
  WorkDispatcher& operator=(const WorkDispatcher&) = delete;

  Result<PassTotals> RunPass(std::uint64_t pass);
  // Orders every worker still there to stop, and waits (up to the timeout) for their goodbyes.
  Status Stop();
  // Workers lost since the last call, each with why: "worker rank 2: <the link's error>".
  std::vector<std::string> TakeLost();
  int live_workers() const;

 private:
  struct Event {
    int worker = 0;
    bool lost = false;  // its link failed: `why`
    std::string why;
    SbHeader header;
  };
  struct WorkerState {
    bool waiting = false;        // reported, and owed an order
    std::uint32_t verdict = 0;   // kSbAccepted / kSbDrop bits to deliver with its next order
    bool lost = false;
    bool gone = false;           // said goodbye
  };

  void Read(int worker);
  Event NextEvent();
  // Hands `worker` its next order if WorkUnits has one, if it is owed one. False when its link
  // failed on an order to push: the pass must start over.
  bool Offer(class WorkUnits& units, std::uint64_t pass, int worker);
  void MarkLost(int worker, const std::string& why);
  // [first, last) of unit u.
  std::pair<std::uint64_t, std::uint64_t> Rows(int unit) const;

  std::vector<Link*> links_;
  DispatchOptions options_;
  std::vector<WorkerState> workers_;
  std::vector<std::string> lost_reports_;

  std::mutex mu_;
  std::condition_variable arrived_;
  std::deque<Event> events_;
  std::vector<std::jthread> readers_;
};

}  // namespace dtrain::dist
