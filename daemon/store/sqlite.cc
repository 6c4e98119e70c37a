#include "daemon/store/sqlite.h"

#include <sqlite3.h>

#include <exception>
#include <utility>

namespace dtrain::store {
namespace {

Status SqliteError(sqlite3* db, int rc) {
  // The connection's message describes the latest failure; fall back to the code's text when
  // the connection has none (e.g. it could not even be allocated).
  const char* message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return Status::Error(message);
}

}  // namespace

// --- Statement ---

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      bind_error_(other.bind_error_),
      last_error_(other.last_error_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_error_ = other.bind_error_;
    last_error_ = other.last_error_;
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::NoteBind(int rc) {
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
}

Statement& Statement::BindInt(int index, std::int64_t value) {
  NoteBind(sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::BindDouble(int index, double value) {
  NoteBind(sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Statement& Statement::BindText(int index, std::string_view value) {
  NoteBind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_STATIC, SQLITE_UTF8));
  return *this;
}

Statement& Statement::BindBlob(int index, std::string_view bytes) {
  NoteBind(sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_STATIC));
  return *this;
}

Statement& Statement::BindNull(int index) {
  NoteBind(sqlite3_bind_null(stmt_, index));
  return *this;
}

Result<bool> Statement::Step() {
  if (bind_error_ != SQLITE_OK) {
    last_error_ = bind_error_;
    return Status::Error(std::string("cannot bind a parameter: ") + sqlite3_errstr(bind_error_));
  }
  const int rc = sqlite3_step(stmt_);
  last_error_ = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc);
}

Status Statement::Run() {
  for (;;) {
    Result<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!row.value()) return Status::Ok();
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_ = SQLITE_OK;
  last_error_ = SQLITE_OK;
}

std::int64_t Statement::ColumnInt(int index) const { return sqlite3_column_int64(stmt_, index); }

double Statement::ColumnDouble(int index) const { return sqlite3_column_double(stmt_, index); }

std::string_view Statement::ColumnText(int index) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
  const int size = sqlite3_column_bytes(stmt_, index);  // after the conversion to text
  return text == nullptr ? std::string_view() : std::string_view(text, size);
}

std::string_view Statement::ColumnBlob(int index) const {
  const auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt_, index));
  const int size = sqlite3_column_bytes(stmt_, index);
  return bytes == nullptr ? std::string_view() : std::string_view(bytes, size);
}

bool Statement::ColumnIsNull(int index) const {
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

// --- Database ---

Result<Database> Database::Open(const std::string& path, OpenMode mode) {
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (mode == kCreate) flags |= SQLITE_OPEN_CREATE;
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    Status error = SqliteError(db, rc);
    sqlite3_close_v2(db);
    return Status::Error("cannot open " + path + ": " + error.message());
  }
  sqlite3_extended_result_codes(db, 1);
  return Database(path, db);
}

Database::Database(Database&& other) noexcept
    : path_(std::move(other.path_)), db_(std::exchange(other.db_, nullptr)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    path_ = std::move(other.path_);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

Database::~Database() { sqlite3_close_v2(db_); }

Status Database::Exec(std::string_view sql) {
  const std::string text(sql);  // sqlite3_exec wants a terminated string
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string error = message != nullptr ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  return Status::Error(std::move(error));
}

Result<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_, rc);
  return Statement(db_, stmt);
}

Result<Statement> Database::QueryRow(std::string_view sql) {
  Result<Statement> statement = Prepare(sql);
  if (!statement.ok()) return statement.status();
  Result<bool> row = statement.value().Step();
  if (!row.ok()) return row.status();
  if (!row.value()) return Status::Error("no row from: " + std::string(sql));
  return statement;
}

Result<std::int64_t> Database::QueryInt(std::string_view sql) {
  Result<Statement> row = QueryRow(sql);
  if (!row.ok()) return row.status();
  return row.value().ColumnInt(0);
}

Result<std::string> Database::QueryText(std::string_view sql) {
  Result<Statement> row = QueryRow(sql);
  if (!row.ok()) return row.status();
  return std::string(row.value().ColumnText(0));
}

std::int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

std::int64_t Database::Changes() const { return sqlite3_changes64(db_); }

std::int64_t Database::MaxBlobSize() const { return sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1); }

int Database::ErrorCode() const { return sqlite3_extended_errcode(db_); }

bool IsDiskFull(int code) { return (code & 0xff) == SQLITE_FULL; }

Status InTransaction(Database& db, const std::function<Status()>& body, int* failure_code) {
  int ignored = 0;
  int& code = failure_code != nullptr ? *failure_code : ignored;
  code = 0;
  if (Status begin = db.Exec("BEGIN IMMEDIATE"); !begin.ok()) {
    code = db.ErrorCode();
    return Status::Error("cannot begin a transaction: " + begin.message());
  }
  Status status;
  try {
    status = body();
  } catch (const std::exception& e) {  // e.g. std::bad_alloc: no exception leaves a transaction
    status = Status::Error(e.what());
  }
  if (status.ok()) {
    status = db.Exec("COMMIT");
    if (status.ok()) return status;
    status = Status::Error("cannot commit: " + status.message());
  }
  code = db.ErrorCode();  // before ROLLBACK replaces it
  // Fails harmlessly when SQLite has already rolled back (e.g. after SQLITE_FULL).
  (void)db.Exec("ROLLBACK");
  return status;
}

// --- ConnectionPool ---

ConnectionPool::Lease::~Lease() {
  if (db_ == nullptr) return;  // moved from
  std::lock_guard lock(pool_->mu_);
  pool_->idle_.push_back(std::move(db_));
}

Result<ConnectionPool::Lease> ConnectionPool::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Database> db = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(db));
    }
  }
  Result<Database> opened = open_();  // outside the lock: opening may wait on the file
  if (!opened.ok()) return opened.status();
  return Lease(this, std::make_unique<Database>(std::move(opened).value()));
}

}  // namespace dtrain::store
