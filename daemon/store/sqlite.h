// Small RAII wrappers over the SQLite C API: a connection (Database), a prepared statement
// (Statement), a transaction scope (InTransaction) and a pool of connections (ConnectionPool).
// SQLite errors become Status values carrying SQLite's message; nothing throws.
//
//   Result<Database> db = Database::Open("dtrain.db", Database::kCreate);
//   Result<Statement> s = db.value().Prepare("SELECT name FROM jobs WHERE id = ?1");
//   s.value().BindInt(1, 7);
//   for (Result<bool> row = s.value().Step(); row.ok() && row.value(); row = s.value().Step()) {}
//
// A Database and its Statements are used by one thread at a time (connections are opened with
// SQLITE_OPEN_NOMUTEX); distinct Databases on one file may be used from different threads.
// ConnectionPool is safe for concurrent use; each lent connection belongs to its borrower.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dtrain::store {

class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Parameters are 1-based. Text and blobs are bound without a copy: they must stay alive
  // until Reset() or the Statement's destruction. A failed bind is reported by the next Step().
  Statement& BindInt(int index, std::int64_t value);
  Statement& BindDouble(int index, double value);
  Statement& BindText(int index, std::string_view value);
  Statement& BindBlob(int index, std::string_view bytes);
  Statement& BindNull(int index);

  // true: a row is ready for the Column* getters; false: the statement has finished.
  Result<bool> Step();
  // Steps until the statement finishes, ignoring any rows (for INSERT, UPDATE, DELETE).
  Status Run();
  // Makes the statement ready to run again and clears its bindings and any error.
  void Reset();
  // The SQLite result code (extended) of the latest failed Step, e.g. SQLITE_CONSTRAINT_FOREIGNKEY;
  // 0 when the latest Step succeeded.
  int last_error() const { return last_error_; }

  // Columns are 0-based and valid until the next Step() or Reset().
  std::int64_t ColumnInt(int index) const;
  double ColumnDouble(int index) const;
  std::string_view ColumnText(int index) const;
  std::string_view ColumnBlob(int index) const;
  bool ColumnIsNull(int index) const;

 private:
  friend class Database;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  void NoteBind(int rc);

  sqlite3* db_ = nullptr;  // not owned: the Database outlives its statements
  sqlite3_stmt* stmt_ = nullptr;
  int bind_error_ = 0;  // first failed bind's SQLite result code, 0 when none
  int last_error_ = 0;
};

class Database {
 public:
  enum OpenMode { kCreate, kExisting };

  // Opens (kCreate: creating if absent) the file at `path`; ":memory:" is not useful here
  // because every connection would see its own database.
  static Result<Database> Open(const std::string& path, OpenMode mode);

  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();  // closes once the last Statement of this connection is destroyed

  // Runs one or more statements that return no rows (schema scripts, PRAGMAs, BEGIN/COMMIT).
  Status Exec(std::string_view sql);
  Result<Statement> Prepare(std::string_view sql);
  // The first column of the first row of `sql`, e.g. "PRAGMA user_version".
  Result<std::int64_t> QueryInt(std::string_view sql);
  Result<std::string> QueryText(std::string_view sql);

  std::int64_t LastInsertRowId() const;
  std::int64_t Changes() const;  // rows changed by the latest INSERT, UPDATE or DELETE
  // SQLite's largest string or blob on this connection (SQLITE_LIMIT_LENGTH).
  std::int64_t MaxBlobSize() const;
  // SQLite's extended result code for this connection's latest failed call.
  int ErrorCode() const;
  const std::string& path() const { return path_; }

 private:
  Database(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  // `sql` prepared and stepped to its first row (an error when it returns none).
  Result<Statement> QueryRow(std::string_view sql);

  std::string path_;
  sqlite3* db_ = nullptr;
};

// Runs `body` between BEGIN IMMEDIATE and COMMIT; rolls back when body fails (returns an error
// or throws) or COMMIT fails, and returns that failure. IMMEDIATE takes the write lock up front, so
// a transaction that reads before it writes never fails half way to a competing writer.
// `failure_code`, when given, receives SQLite's (extended) result code for the failure — e.g.
// SQLITE_FULL, see IsDiskFull — and 0 when the transaction was committed.
Status InTransaction(Database& db, const std::function<Status()>& body,
                     int* failure_code = nullptr);

// Whether a SQLite result code (primary or extended) says the disk (or the database) is full.
bool IsDiskFull(int code);

// Connections to one file, opened on demand by `open` and reused: Acquire lends an idle one
// (or opens another when all are lent), and the Lease gives it back when destroyed. The pool
// must outlive its leases.
class ConnectionPool {
 public:
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), db_(std::move(other.db_)) {}
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    Database& operator*() const { return *db_; }
    Database* operator->() const { return db_.get(); }

   private:
    friend class ConnectionPool;
    Lease(ConnectionPool* pool, std::unique_ptr<Database> db) : pool_(pool), db_(std::move(db)) {}
    ConnectionPool* pool_;  // not owned: outlives the lease
    std::unique_ptr<Database> db_;
  };

  explicit ConnectionPool(std::function<Result<Database>()> open) : open_(std::move(open)) {}
  Result<Lease> Acquire();

 private:
  std::function<Result<Database>()> open_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Database>> idle_;  // guarded by mu_
};

}  // namespace dtrain::store
