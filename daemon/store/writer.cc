#include "daemon/store/writer.h"

#include <sqlite3.h>

#include <algorithm>
#include <utility>

namespace dtrain::store {
namespace {

bool IsRow(const auto& request) {
  return std::holds_alternative<MetricRows>(request) || std::holds_alternative<LogLine>(request);
}

// Errors that concern one row only: SQLite undoes that statement and the transaction goes on.
bool IsRowError(int code) { return (code & 0xff) == SQLITE_CONSTRAINT || code == SQLITE_TOOBIG; }

std::string Owner(std::int64_t job, int worker) {
  return "job " + std::to_string(job) + " (worker " + std::to_string(worker) + ")";
}

}  // namespace

Result<std::unique_ptr<Writer>> Writer::Start(Database db, SpaceReserve reserve) {
  Result<Statement> metric = db.Prepare(
      "INSERT INTO metrics (job, step, worker, name, value, epoch, time) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  if (!metric.ok()) return metric.status();
  Result<Statement> log =
      db.Prepare("INSERT INTO logs (job, worker, stream, time, line) VALUES (?1, ?2, ?3, ?4, ?5)");
  if (!log.ok()) return log.status();
  reserve.Make();  // an existing one is kept as it is; none made when the disk is full
  return std::unique_ptr<Writer>(new Writer(std::move(db), std::move(metric).value(),
                                            std::move(log).value(), std::move(reserve)));
}

Writer::Writer(Database db, Statement insert_metric, Statement insert_log, SpaceReserve reserve)
    : db_(std::move(db)),
      insert_metric_(std::move(insert_metric)),
      insert_log_(std::move(insert_log)),
      reserve_(std::move(reserve)),
      thread_([this] { Loop(); }) {}

Writer::~Writer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void Writer::Append(MetricRows rows) {
  const std::size_t count = rows.points.size();
  if (count > 0) Post(std::move(rows), count);
}

void Writer::Append(LogLine line) { Post(std::move(line), 1); }

Status Writer::Execute(const std::function<Status(Database&)>& body, OnDiskFull on_full) {
  std::promise<Status> done;
  std::future<Status> result = done.get_future();
  Post(Transaction{&body, on_full, std::move(done)}, 0);
  return result.get();
}

Status Writer::ExecuteBare(const std::function<Status(Database&)>& body) {
  std::promise<Status> done;
  std::future<Status> result = done.get_future();
  Post(Transaction{&body, OnDiskFull::kFail, std::move(done), true}, 0);
  return result.get();
}

Status Writer::Flush() {
  std::promise<Status> done;
  std::future<Status> result = done.get_future();
  Post(Barrier{std::move(done)}, 0);
  return result.get();
}

void Writer::Post(Request request, std::size_t rows) {
  std::unique_lock lock(mu_);
  if (rows > 0) space_.wait(lock, [&] { return queued_rows_ < kMaxQueuedRows; });
  // The writer waits on an empty queue (any request wakes it), or lingers over queued rows
  // (only an urgent request or a full batch cuts that short).
  const bool was_empty = queue_.empty();
  const bool urgent = rows == 0;
  const bool batch_full = queued_rows_ < kBatchRows && queued_rows_ + rows >= kBatchRows;
  queue_.push_back(std::move(request));
  queued_rows_ += rows;
  if (was_empty || (urgent && !urgent_) || batch_full) wake_.notify_one();
  urgent_ = urgent_ || urgent;
}

void Writer::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued is written
    wake_.wait_for(lock, kRowLinger,
                   [&] { return stopping_ || urgent_ || queued_rows_ >= kBatchRows; });
    std::vector<Request> requests;
    requests.swap(queue_);
    queued_rows_ = 0;
    urgent_ = false;
    space_.notify_all();
    lock.unlock();
    Process(requests);
    lock.lock();
  }
}

void Writer::Process(std::vector<Request>& requests) {
  // Space that came back (a file deleted, a disk grown) is the reserve's again before anything
  // else takes it: until then metric rows are dropped.
  if (reserve_.bytes() > 0 && !reserve_.held()) RemakeReserve(/*only_with_room=*/true);
  for (auto it = requests.begin(); it != requests.end();) {
    if (IsRow(*it)) {
      const auto end =
          std::find_if_not(it, requests.end(), [](const Request& r) { return IsRow(r); });
      WriteRows(std::span<Request>(it, end));
      it = end;
      continue;
    }
    if (auto* transaction = std::get_if<Transaction>(&*it)) {
      transaction->done.set_value(
          transaction->bare
              ? (*transaction->body)(db_)
              : Commit([&] { return (*transaction->body)(db_); }, transaction->on_full));
    } else {
      std::get<Barrier>(*it).done.set_value(TakeDropReport());
    }
    ++it;
  }
}

void Writer::WriteRows(std::span<Request> rows) {
  std::size_t points = 0, lines = 0;  // rows holds MetricRows and LogLine requests only
  for (const Request& r : rows) {
    if (const auto* m = std::get_if<MetricRows>(&r)) {
      points += m->points.size();
    } else {
      ++lines;
    }
  }
  std::size_t refused = 0;
  std::string first_refusal;
  // Runs a bound insert. A refused row is dropped alone (once the rest is committed); any other
  // error aborts the transaction (returned as an error, so InTransaction rolls back).
  auto insert = [&](Statement& statement, const auto& describe) -> Status {
    Status status = statement.Run();
    const int code = statement.last_error();
    statement.Reset();
    if (status.ok()) return status;
    if (!IsRowError(code)) return Status::Error(describe() + ": " + status.message());
    if (refused++ == 0) first_refusal = describe() + ": " + status.message();
    return Status::Ok();
  };
  auto write = [&](bool with_metrics) -> Status {
    refused = 0;  // another try starts afresh
    first_refusal.clear();
    for (const Request& r : rows) {
      if (const auto* m = std::get_if<MetricRows>(&r)) {
        if (!with_metrics) continue;
        for (const train::MetricPoint& p : m->points) {
          insert_metric_.BindInt(1, m->job)
              .BindInt(2, p.step)
              .BindInt(3, m->worker)
              .BindText(4, p.name)
              .BindDouble(5, p.value)
              .BindDouble(6, p.epoch)
              .BindDouble(7, m->time);
          Status s = insert(insert_metric_, [&] {
            return "metric '" + p.name + "' of " + Owner(m->job, m->worker);
          });
          if (!s.ok()) return s;
        }
      } else if (const auto* l = std::get_if<LogLine>(&r)) {
        insert_log_.BindInt(1, l->job)
            .BindInt(2, l->worker)
            .BindText(3, l->stream)
            .BindDouble(4, l->time)
            .BindText(5, l->line);
        Status s = insert(insert_log_, [&] { return "log line of " + Owner(l->job, l->worker); });
        if (!s.ok()) return s;
      }
    }
    return Status::Ok();
  };
  int code = 0;
  Status status;
  if (reserve_.bytes() > 0 && !reserve_.held()) {
    // The reserve was given back and not made again: the disk is full, and the space it freed
    // is for state changes and log lines, not for the metrics that come every step.
    status = Status::Error("metric rows dropped while the disk is full (" + reserve_.path() +
                           " is in use)");
    code = SQLITE_FULL;
  } else {
    status = InTransaction(db_, [&] { return write(true); }, &code);
  }
  if (status.ok()) {
    Drop(refused, first_refusal);
    return;
  }
  if (!IsDiskFull(code) || lines == 0) {
    Drop(points + lines, status.message());
    return;
  }
  // The disk is full: the log lines (a worker's last words) are kept, in the reserve if need be;
  // the metrics, which come every step and would eat it, are dropped.
  Drop(points, status.message());
  status = InTransaction(db_, [&] { return write(false); }, &code);
  if (!status.ok() && IsDiskFull(code) && ReleaseReserve()) {
    status = InTransaction(db_, [&] { return write(false); }, &code);
  }
  if (status.ok()) {
    Drop(refused, first_refusal);
  } else {
    Drop(lines, status.message());
  }
}

Status Writer::Commit(const std::function<Status()>& body, OnDiskFull on_full) {
  // A large write goes ahead only while the reserve is held: space the reserve gave back is for
  // the records, not for the next checkpoint.
  if (on_full == OnDiskFull::kFail && reserve_.bytes() > 0 && !reserve_.held() &&
      !RemakeReserve()) {
    return Status::Error(StatusCode::kNoSpace,
                         "database or disk is full (the " + std::to_string(reserve_.bytes() >> 20) +
                             " MiB the store keeps free in " + reserve_.path() + " are in use)");
  }
  int code = 0;
  Status status = InTransaction(db_, body, &code);
  if (!status.ok() && IsDiskFull(code) && on_full == OnDiskFull::kUseReserve &&
      ReleaseReserve()) {
    status = InTransaction(db_, body, &code);
  }
  if (!status.ok() && IsDiskFull(code))
    return Status::Error(StatusCode::kNoSpace, status.message());
  return status;
}

void Writer::Drop(std::size_t rows, const std::string& why) {
  if (rows == 0) return;
  if (dropped_rows_ == 0) first_drop_ = why;
  dropped_rows_ += rows;
}

Status Writer::TakeDropReport() {
  if (dropped_rows_ == 0) return Status::Ok();
  Status report = Status::Error(std::to_string(dropped_rows_) +
                                " appended row(s) were not stored; the first: " + first_drop_);
  dropped_rows_ = 0;
  first_drop_.clear();
  return report;
}

bool Writer::ReleaseReserve() {
  if (!reserve_.Release()) return false;
  // Copying the WAL back into the database file would grow that file into the space just given
  // back: no automatic WAL checkpoint until the reserve is made again. (Setting it takes no lock:
  // nothing to report.)
  (void)db_.Exec("PRAGMA wal_autocheckpoint = 0");
  return true;
}

bool Writer::RemakeReserve(bool only_with_room) {
  if (!(only_with_room ? reserve_.MakeIfRoom() : reserve_.Make())) return false;
  (void)db_.Exec("PRAGMA wal_autocheckpoint = 1000");  // SQLite's default; takes no lock
  return true;
}

}  // namespace dtrain::store
