// The store's schema as an ordered list of forward migrations, and the code that applies them.
//
//   Status s = Migrate(db, StoreMigrations());   // brings db to StoreMigrations().size()
//
// `PRAGMA user_version` counts the migrations a file has had. Each migration runs in its own
// transaction together with its user_version bump, so a file is always at a whole version; a
// file at a higher version than the list knows is refused rather than guessed at. The list is
// append-only: a shipped step is never edited, the schema changes by adding a step.
//
// Migrate uses the Database it is given (one thread at a time); the list is constant data.
#pragma once

#include <span>
#include <string_view>

#include "core/status.h"
#include "daemon/store/sqlite.h"

namespace dtrain::store {

struct Migration {
  std::string_view description;  // named in errors: "migration 2 (add metric epochs): ..."
  std::string_view sql;          // one or more statements
};

// The run store's migrations; migration i (0-based) brings a file from version i to i + 1.
std::span<const Migration> StoreMigrations();

// Applies migrations[v], migrations[v + 1], ... where v is the file's user_version. Each step
// re-reads the version inside its write transaction, so two processes migrating one file at
// once apply every step exactly once.
Status Migrate(Database& db, std::span<const Migration> migrations);

}  // namespace dtrain::store
