// Writer: the run store's one writing thread. It owns the store's write connection, and every
// change to the file is a request in its queue, carried out in queue order.
//
//   Result<std::unique_ptr<Writer>> w = Writer::Start(std::move(db));
//   w.value()->Append(LogLine{job, 0, 12.5, "stdout", "epoch 1 done"});   // returns at once
//   Status s = w.value()->Execute([&](Database& db) { return SetStateRows(db); });  // waits
//
// Metric and log rows are asynchronous: consecutive ones share one transaction, so thousands of
// rows cost one commit. A row SQLite refuses (e.g. for a job that does not exist) is dropped
// alone and the rest of its transaction is kept; a failure of the transaction itself (disk full)
// drops its rows. Drops are counted and reported by the next Flush(), which returns once every
// request queued before it is committed. Execute runs a body in a transaction of its own and
// returns its result. The connection's synchronous=FULL makes every commit durable.
//
// A full disk: the writer keeps a SpaceReserve (space_reserve.h) when it was given one. A
// transaction that fails with SQLITE_FULL gives the reserve back and is tried once more, so
// state changes are still recorded; a batch of rows that fails so is written again without its
// metric rows (dropped), then once more in the reserve, so the log lines that explain a failure
// are kept too (and metric rows are dropped at once until the reserve is made again); a
// transaction run with OnDiskFull::kFail (a checkpoint) never uses the reserve and just fails;
// once the reserve was given back, such a transaction first makes it again, and fails (disk
// full) when it cannot. A reserve given back is also made again as soon as the disk has room
// for it twice over (SpaceReserve::MakeIfRoom, checked before each batch of requests), so
// metric rows are kept again once space is back.
//
// Appends return at once unless more than kMaxQueuedRows rows are waiting; then they wait for
// the writer to catch up (backpressure instead of unbounded memory). Rows are gathered for up
// to kRowLinger (or kBatchRows rows) before they are written, so a training loop appending a
// few metrics every step costs one commit and one wake-up per linger, not per step; a durable
// operation or a Flush is served at once, with every row queued before it.
//
// Safe for concurrent use. Requests from one thread are carried out in that thread's order.
// The destructor writes everything queued, then stops the thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "core/status.h"
#include "core/train/metrics.h"
#include "daemon/store/space_reserve.h"
#include "daemon/store/sqlite.h"

namespace dtrain::store {

struct MetricRows {
  std::int64_t job = 0;
  int worker = 0;
  double time = 0;
  std::vector<train::MetricPoint> points;
};

struct LogLine {
  std::int64_t job = 0;
  int worker = 0;
  double time = 0;
  std::string stream;
  std::string line;
};

// What a transaction does when the disk is full: use the space reserve (small, vital writes) or
// fail at once (large ones, which would eat it).
enum class OnDiskFull { kUseReserve, kFail };

class Writer {
 public:
  static constexpr std::size_t kMaxQueuedRows = std::size_t{1} << 20;
  static constexpr std::size_t kBatchRows = 4096;
  static constexpr std::chrono::milliseconds kRowLinger{50};

  // Takes over `db`, which must already have the store's schema, and keeps `reserve` (made
  // now if the disk has room).
  static Result<std::unique_ptr<Writer>> Start(Database db, SpaceReserve reserve = {"", 0});
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void Append(MetricRows rows);
  void Append(LogLine line);

  // Runs body(db) on the writer thread inside BEGIN IMMEDIATE ... COMMIT (rolled back if body
  // fails) after everything queued before it, and returns its status once committed
  // (StatusCode::kNoSpace when the disk was full).
  Status Execute(const std::function<Status(Database&)>& body,
                 OnDiskFull on_full = OnDiskFull::kUseReserve);
  // The same outside any transaction, for what SQLite refuses in one (VACUUM) or commits on its
  // own (PRAGMA incremental_vacuum, wal_checkpoint).
  Status ExecuteBare(const std::function<Status(Database&)>& body);

  // Waits until everything queued before the call is committed. Returns an error if rows
  // appended since the previous Flush (by any thread) were dropped, saying how many and the
  // first reason; each drop is reported to one Flush only.
  Status Flush();

 private:
  struct Transaction {
    const std::function<Status(Database&)>* body;  // not owned: Execute waits for it
    OnDiskFull on_full;
    std::promise<Status> done;
    bool bare = false;  // ExecuteBare: no BEGIN ... COMMIT around it
  };
  struct Barrier {
    std::promise<Status> done;
  };
  using Request = std::variant<MetricRows, LogLine, Transaction, Barrier>;

  Writer(Database db, Statement insert_metric, Statement insert_log, SpaceReserve reserve);
  void Post(Request request, std::size_t rows);
  void Loop();
  void Process(std::vector<Request>& requests);
  // Writes a run of MetricRows and LogLine requests in one transaction.
  void WriteRows(std::span<Request> rows);
  // InTransaction, once more after giving the reserve back if the disk was full and `on_full`
  // allows; kFail first makes the reserve again if it was given back.
  Status Commit(const std::function<Status()>& body, OnDiskFull on_full);
  // Give the reserve back (false if none was held) / make it again (false if there is no room),
  // stopping and resuming automatic WAL checkpoints, which would grow the database file into
  // the space given back.
  bool ReleaseReserve();
  bool RemakeReserve(bool only_with_room = false);
  void Drop(std::size_t rows, const std::string& why);
  Status TakeDropReport();

  // Used only by the writer thread once it runs.
  Database db_;
  Statement insert_metric_;
  Statement insert_log_;
  std::uint64_t dropped_rows_ = 0;
  std::string first_drop_;
  SpaceReserve reserve_;

  std::mutex mu_;
  std::condition_variable wake_;   // the writer: requests arrived or stopping_
  std::condition_variable space_;  // appenders: queued_rows_ fell below the limit
  std::vector<Request> queue_;     // guarded by mu_
  std::size_t queued_rows_ = 0;    // guarded by mu_
  bool stopping_ = false;          // guarded by mu_
  bool urgent_ = false;            // guarded by mu_: a non-row request is queued
  std::thread thread_;             // last: starts once the members above exist
};

}  // namespace dtrain::store
