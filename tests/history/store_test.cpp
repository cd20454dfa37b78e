// The SQLite store: round trip, deduplication, an add killed half-way, foreign and corrupt files.
#include <csignal>
#include <fstream>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "store.h"
#include "synthetic.h"

namespace gptbench::history {
namespace {

using testing::make_run;
using testing::RunSpec;
using testing::TempDir;

int64_t count(Database& db, const std::string& table) { return db.query_int("SELECT count(*) FROM " + table); }

TEST(StoreTest, RoundTripKeepsRepetitionsCountersAndContext) {
  TempDir dir;
  Database db(dir.file("h.sqlite"), Database::Mode::kCreate);
  RunSpec spec;
  spec.medians = {1000, 2000, 3000};
  const runjson::Run run = make_run(spec);
  const AddResult added = add_run(db, run, AddOptions{"abc123", "main", ""});
  EXPECT_FALSE(added.duplicate);

  const std::vector<RunInfo> runs = list_runs(db);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].commit, "abc123");
  EXPECT_EQ(runs[0].branch, "main");
  EXPECT_EQ(runs[0].date, spec.date);
  EXPECT_EQ(runs[0].device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(runs[0].environment,
            "device=NVIDIA H100 80GB HBM3, gpu_driver=580.0, cuda_runtime=13.0, libtorch=2.11.0, timer_hold_ns=50000");
  EXPECT_EQ(runs[0].benchmarks, 3);
  EXPECT_EQ(runs[0].context, run.context);

  const runjson::Run stored = load_stored_run(db, runs[0]);
  ASSERT_EQ(stored.benchmarks.size(), 3u);
  for (size_t b = 0; b < 3; ++b) {
    const runjson::Benchmark& want = run.benchmarks[b];
    const runjson::Benchmark& got = stored.benchmarks[b];
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.samples(runjson::TimeKind::kReal), want.samples(runjson::TimeKind::kReal));
    ASSERT_EQ(got.counters.size(), 1u);
    EXPECT_EQ(got.counters[0].name, "bytes/s");
    EXPECT_EQ(got.counters[0].values, want.counters[0].values);
  }
  EXPECT_EQ(count(db, "repetitions"), 15);
}

TEST(StoreTest, SameRunTwiceIsAddedOnce) {
  TempDir dir;
  Database db(dir.file("h.sqlite"), Database::Mode::kCreate);
  const runjson::Run run = make_run(RunSpec{});
  const AddResult first = add_run(db, run, AddOptions{});
  runjson::Run copy = run;
  copy.source = "another/file/name.json";  // same content under another name
  const AddResult second = add_run(db, copy, AddOptions{"other", "other", ""});
  EXPECT_TRUE(second.duplicate);
  EXPECT_EQ(second.run_id, first.run_id);
  EXPECT_EQ(count(db, "runs"), 1);
  EXPECT_EQ(count(db, "results"), 3);
  RunSpec other;
  other.seed = 2;
  EXPECT_FALSE(add_run(db, make_run(other), AddOptions{}).duplicate);
  EXPECT_EQ(count(db, "runs"), 2);
}

TEST(StoreTest, AddKilledHalfWayLeavesTheDatabaseUnchanged) {
  TempDir dir;
  const std::string path = dir.file("h.sqlite");
  {
    Database db(path, Database::Mode::kCreate);
    add_run(db, make_run(RunSpec{}), AddOptions{});
  }
  RunSpec big;
  big.benchmarks = 2000;
  big.seed = 9;
  const runjson::Run run = make_run(big);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child dies by SIGKILL in the middle of the transaction: no destructor, no rollback.
    Database db(path, Database::Mode::kCreate);
    add_run(db, run, AddOptions{}, [](size_t written) {
      if (written == 1000) raise(SIGKILL);
    });
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  Database db(path, Database::Mode::kExisting);
  EXPECT_EQ(count(db, "runs"), 1);
  EXPECT_EQ(count(db, "results"), 3);
  EXPECT_EQ(count(db, "repetitions"), 15);
  EXPECT_EQ(count(db, "benchmarks"), 3);
  Statement check = db.prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.step());
  EXPECT_EQ(check.column_text(0), "ok");
  check.reset();
  // And the same run can then be added whole.
  EXPECT_FALSE(add_run(db, run, AddOptions{}).duplicate);
  EXPECT_EQ(count(db, "results"), 2003);
}

TEST(DatabaseTest, NewDatabaseIsMarkedAndVersioned) {
  TempDir dir;
  Database db(dir.file("h.sqlite"), Database::Mode::kCreate);
  EXPECT_EQ(db.query_int("PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(db.query_int("PRAGMA user_version"), kSchemaVersion);
}

TEST(DatabaseTest, MissingFileIsAnErrorForReading) {
  TempDir dir;
  EXPECT_THROW(Database(dir.file("none.sqlite"), Database::Mode::kExisting), HistoryError);
}

TEST(DatabaseTest, NotSqliteIsAnError) {
  TempDir dir;
  std::ofstream(dir.file("junk.sqlite")) << "this is not a database, just text that is long enough to look like one "
                                         << std::string(4096, 'x');
  try {
    Database(dir.file("junk.sqlite"), Database::Mode::kCreate);
    FAIL() << "no error";
  } catch (const HistoryError& error) {
    EXPECT_NE(std::string(error.what()).find("not a gptbench history"), std::string::npos) << error.what();
  }
}

void write_raw_sqlite(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

TEST(DatabaseTest, ForeignSqliteIsAnErrorAndUntouched) {
  TempDir dir;
  const std::string path = dir.file("other.sqlite");
  write_raw_sqlite(path, "CREATE TABLE customers(id INTEGER); INSERT INTO customers VALUES (1);");
  try {
    Database(path, Database::Mode::kCreate);
    FAIL() << "no error";
  } catch (const HistoryError& error) {
    EXPECT_NE(std::string(error.what()).find("another application"), std::string::npos) << error.what();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema", -1, &statement, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(statement), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(statement, 0), 1);  // no history tables were added
  sqlite3_finalize(statement);
  sqlite3_close(db);
}

TEST(DatabaseTest, VersionOneIsMigratedKeepingItsRuns) {
  TempDir dir;
  const std::string path = dir.file("v1.sqlite");
  write_raw_sqlite(path, (std::string(schema_migrations()[0]) + "PRAGMA application_id = " + std::to_string(kApplicationId) +
                      "; PRAGMA user_version = 1;"
                      "INSERT INTO runs VALUES (1, 'd', 'c1', 'main', '2026-01-01', '2026-01-01', 's.json', 'cpu',"
                      " 'device=cpu', '{}');"
                      "INSERT INTO benchmarks VALUES (1, 'bench/a');"
                      "INSERT INTO results VALUES (1, 1, 1, 'ok', '', '', 1, 1000, 1000, 1000);")
                         .c_str());
  Database db(path, Database::Mode::kExisting);
  EXPECT_EQ(db.query_int("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(db.query_int("SELECT count(*) FROM sqlite_schema WHERE name = 'results_series'"), 1);
  EXPECT_EQ(db.query_int("SELECT count(*) FROM sqlite_schema WHERE name = 'results_benchmark'"), 0);
  const std::vector<RunInfo> runs = list_runs(db);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].commit, "c1");
  EXPECT_EQ(runs[0].benchmarks, 1);
}

TEST(DatabaseTest, NewerSchemaIsAnError) {
  TempDir dir;
  const std::string path = dir.file("future.sqlite");
  write_raw_sqlite(path, ("PRAGMA application_id = " + std::to_string(kApplicationId) +
                      "; PRAGMA user_version = 99; CREATE TABLE runs(id INTEGER);").c_str());
  try {
    Database(path, Database::Mode::kExisting);
    FAIL() << "no error";
  } catch (const HistoryError& error) {
    EXPECT_NE(std::string(error.what()).find("newer than this gptbench-history"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace gptbench::history
