#include "database.h"

#include <sqlite3.h>

#include <cmath>
#include <filesystem>

namespace gptbench::history {
namespace {

// migrations[v] takes a database from user_version v to v + 1. Append, never edit.
const std::vector<const char*> kMigrations = {
    // 0 -> 1: runs, benchmark names, one result per benchmark of a run (with the median and
    // quartiles of its real time, so trend pages need not read every repetition), the
    // repetitions and the counter values.
    R"sql(
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,      -- of the run's content: the same run is never added twice
  commit_sha TEXT NOT NULL,
  branch TEXT NOT NULL,
  date TEXT NOT NULL,               -- the run's context date (ISO 8601), series are in this order
  added TEXT NOT NULL,
  source TEXT NOT NULL,
  device TEXT NOT NULL,             -- gpu_name, or "cpu"
  environment TEXT NOT NULL,        -- GPU, driver, CUDA, LibTorch, timer: one series each
  context TEXT NOT NULL             -- the JSON context (scalars), as a JSON object
);
CREATE INDEX runs_date ON runs(date, id);
CREATE TABLE benchmarks(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE results(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id),
  status TEXT NOT NULL,             -- ok, skipped, errored
  message TEXT NOT NULL,
  label TEXT NOT NULL,
  declared_repetitions INTEGER NOT NULL,
  median_ns REAL, q1_ns REAL, q3_ns REAL,  -- real time; NULL when nothing ran
  UNIQUE(run_id, benchmark_id)
);
CREATE INDEX results_benchmark ON results(benchmark_id, run_id);
CREATE TABLE repetitions(
  result_id INTEGER NOT NULL REFERENCES results(id),
  idx INTEGER NOT NULL,
  process INTEGER NOT NULL,         -- process_index, -1 when the row has none
  real_ns REAL NOT NULL,
  cpu_ns REAL NOT NULL,
  PRIMARY KEY(result_id, idx)
) WITHOUT ROWID;
CREATE TABLE counters(
  result_id INTEGER NOT NULL REFERENCES results(id),
  name TEXT NOT NULL,
  idx INTEGER NOT NULL,
  value REAL,                       -- NULL for NaN
  process INTEGER NOT NULL,
  PRIMARY KEY(result_id, name, idx)
) WITHOUT ROWID;
)sql",
    // 1 -> 2: the series of a benchmark (trend, show) read from one covering index, in run
    // order, without a lookup of each result row.
    R"sql(
DROP INDEX results_benchmark;
CREATE INDEX results_series ON results(benchmark_id, run_id, median_ns, q1_ns, q3_ns) WHERE status = 'ok';
)sql",
};

}  // namespace

const std::vector<const char*>& schema_migrations() { return kMigrations; }

Statement::Statement(sqlite3* db, sqlite3_stmt* statement, std::string path)
    : db_(db), statement_(statement), path_(std::move(path)) {}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), statement_(other.statement_), path_(std::move(other.path_)) {
  other.statement_ = nullptr;
}

Statement::~Statement() { sqlite3_finalize(statement_); }

void Statement::check(int code) const {
  if (code != SQLITE_OK) throw HistoryError(path_ + ": " + sqlite3_errmsg(db_));
}

Statement& Statement::bind(int index, double value) {
  check(std::isnan(value) ? sqlite3_bind_null(statement_, index) : sqlite3_bind_double(statement_, index, value));
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  check(sqlite3_bind_int64(statement_, index, value));
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  check(sqlite3_bind_text(statement_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
  return *this;
}

Statement& Statement::bind_null(int index) {
  check(sqlite3_bind_null(statement_, index));
  return *this;
}

bool Statement::step() {
  const int code = sqlite3_step(statement_);
  if (code == SQLITE_ROW) return true;
  sqlite3_reset(statement_);
  if (code != SQLITE_DONE) throw HistoryError(path_ + ": " + sqlite3_errstr(code) + " (" + sqlite3_errmsg(db_) + ")");
  return false;
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() { sqlite3_reset(statement_); }

int64_t Statement::column_int(int index) const { return sqlite3_column_int64(statement_, index); }

double Statement::column_double(int index) const {
  return column_is_null(index) ? NAN : sqlite3_column_double(statement_, index);
}

std::string Statement::column_text(int index) const {
  const auto* text = sqlite3_column_text(statement_, index);
  return text ? std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(statement_, index)) : "";
}

bool Statement::column_is_null(int index) const { return sqlite3_column_type(statement_, index) == SQLITE_NULL; }

Database::Database(const std::string& path, Mode mode) : db_(nullptr, sqlite3_close_v2), path_(path) {
  if (mode == Mode::kExisting && !std::filesystem::exists(path)) {
    throw HistoryError(path + ": no history database here (gptbench-history add RUN.json creates it)");
  }
  const int flags = SQLITE_OPEN_READWRITE | (mode == Mode::kCreate ? SQLITE_OPEN_CREATE : 0);
  sqlite3* handle = nullptr;
  const int code = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  db_.reset(handle);  // sqlite3_open_v2 returns a handle to close even when it fails
  if (code != SQLITE_OK) fail("cannot open");
  sqlite3_busy_timeout(handle, 10000);  // a concurrent add waits for the other to commit
  // The first read of the header: a file that is not SQLite fails here.
  int64_t application_id = 0;
  try {
    application_id = query_int("PRAGMA application_id");
  } catch (const HistoryError&) {
    throw HistoryError(path + ": not a gptbench history (not a SQLite database, or a corrupt one)");
  }
  const int64_t tables = query_int("SELECT count(*) FROM sqlite_schema");
  if (application_id != kApplicationId && !(application_id == 0 && tables == 0)) {
    throw HistoryError(path + ": a SQLite database of another application (application_id " +
                       std::to_string(application_id) + ", " + std::to_string(tables) +
                       " schema objects), not a gptbench history");
  }
  if (mode == Mode::kExisting && tables == 0) throw HistoryError(path + ": empty history database (add a run first)");
  migrate();
}

void Database::fail(const std::string& what) const {
  throw HistoryError(path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_.get()) : "out of memory"));
}

void Database::migrate() {
  const int64_t version = query_int("PRAGMA user_version");
  if (version > kSchemaVersion) {
    throw HistoryError(path_ + ": history schema version " + std::to_string(version) +
                       " is newer than this gptbench-history (version " + std::to_string(kSchemaVersion) + ")");
  }
  if (version == kSchemaVersion) return;
  Transaction transaction(*this);
  for (int64_t v = version; v < kSchemaVersion; ++v) exec(kMigrations[static_cast<size_t>(v)]);
  exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
  transaction.commit();
}

Statement Database::prepare(std::string_view sql) {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &statement, nullptr) != SQLITE_OK) {
    fail("SQL error");
  }
  return Statement(db_.get(), statement, path_);
}

void Database::exec(const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    throw HistoryError(path_ + ": " + text);
  }
}

int64_t Database::last_insert_id() const { return sqlite3_last_insert_rowid(db_.get()); }

int64_t Database::query_int(std::string_view sql) {
  Statement statement = prepare(sql);
  if (!statement.step()) throw HistoryError(path_ + ": no result for " + std::string(sql));
  const int64_t value = statement.column_int(0);
  statement.reset();
  return value;
}

Transaction::Transaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!open_) return;
  try {
    db_.exec("ROLLBACK");
  } catch (const HistoryError&) {
    // Nothing to do: SQLite has already rolled back (e.g. after an I/O error).
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

}  // namespace gptbench::history
