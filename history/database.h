// A thin RAII layer over the SQLite C API for the history store: one connection, prepared
// statements, transactions that roll back unless committed, and the schema (versioned with
// PRAGMA user_version, marked as ours with PRAGMA application_id, migrated on open).
// Every SQLite failure becomes a HistoryError whose message is one line naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace gptbench::history {

// Bad input or an unusable database: the CLI prints the message and exits 2.
class HistoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// 'gptb': PRAGMA application_id of every history database.
constexpr int32_t kApplicationId = 0x67707462;
// The schema version this build writes and reads (PRAGMA user_version).
constexpr int kSchemaVersion = 2;

// The SQL of each migration: element v takes user_version v to v + 1 (for tests of old files).
const std::vector<const char*>& schema_migrations();

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* statement, std::string path);
  Statement(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQLite; a NaN double binds NULL.
  Statement& bind(int index, double value);
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, std::string_view text);
  Statement& bind_null(int index);
  // true while a row is available; false when done (the statement is then reset).
  bool step();
  // Runs to completion and resets, for INSERT / UPDATE.
  void run();
  void reset();

  int64_t column_int(int index) const;
  double column_double(int index) const;  // NULL reads as NaN
  std::string column_text(int index) const;
  bool column_is_null(int index) const;

 private:
  void check(int code) const;
  sqlite3* db_;
  sqlite3_stmt* statement_;
  std::string path_;
};

class Database {
 public:
  enum class Mode {
    kCreate,  // open or create, migrate to kSchemaVersion (add)
    kExisting,  // the file must exist and hold a history (list, show, trend, ...)
  };
  // Opens and checks `path`: a file that is not SQLite, a SQLite file of another
  // application, or a schema newer than this build are HistoryErrors.
  Database(const std::string& path, Mode mode);
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  Statement prepare(std::string_view sql);
  void exec(const std::string& sql);
  int64_t last_insert_id() const;
  const std::string& path() const { return path_; }
  // The single integer of a one-row, one-column query.
  int64_t query_int(std::string_view sql);

 private:
  void migrate();
  [[noreturn]] void fail(const std::string& what) const;
  // Closed also when the constructor throws (a member, unlike the destructor, is cleaned up).
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db_;
  std::string path_;
};

// BEGIN IMMEDIATE ... COMMIT; destroyed without commit(), it rolls back. A process killed
// inside one leaves a journal that SQLite rolls back on the next open.
class Transaction {
 public:
  explicit Transaction(Database& db);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void commit();

 private:
  Database& db_;
  bool open_ = true;
};

}  // namespace gptbench::history
