#include "gb_json.h"

#include <gtest/gtest.h>

namespace gptbench::runner {
namespace {

// As Google Benchmark 1.7 writes it, with strings that contain braces, quotes and escapes,
// and a bare NaN counter.
const char* kDoc = R"({
  "context": {
    "date": "2026-11-22T10:00:00+00:00",
    "executable": "./gptbench {x}",
    "gpu": "H200 \"SXM\""
  },
  "benchmarks": [
    {
      "name": "alpha/one/manual_time",
      "run_name": "alpha/one/manual_time",
      "run_type": "iteration",
      "iterations": 1,
      "real_time": 1.0e+06,
      "cpu_time": 1.2e+03,
      "time_unit": "ns",
      "odd": NaN
    },
    {
      "name": "alpha/two}]\"/manual_time",
      "run_name": "alpha/two}]\"/manual_time",
      "run_type": "iteration",
      "iterations": 1,
      "real_time": 2.0,
      "cpu_time": 2.0,
      "time_unit": "us"
    },
    {
      "name": "alpha/two}]\"/manual_time_mean",
      "run_name": "alpha/two}]\"/manual_time",
      "run_type": "aggregate",
      "aggregate_name": "mean",
      "iterations": 1,
      "real_time": 2.0,
      "cpu_time": 2.0,
      "time_unit": "us"
    }
  ]
}
)";

TEST(GbJson, CompleteDocument) {
  const GbJsonDocument d = read_gb_json(kDoc);
  EXPECT_TRUE(d.complete);
  EXPECT_EQ(d.problem, "");
  ASSERT_TRUE(d.context.has_value());
  EXPECT_EQ((*d.context)["gpu"], "H200 \"SXM\"");
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(row_benchmark(d.rows[0]), "alpha/one/manual_time");
  EXPECT_EQ(d.rows[0]["odd"], "NaN");  // as gptbench-compare reads it
  EXPECT_EQ(row_benchmark(d.rows[2]), "alpha/two}]\"/manual_time");
}

// Cut at every byte: the rows returned are exactly those complete before the cut, and the
// context appears once its object is closed.
TEST(GbJson, EveryTruncationKeepsExactlyTheCompleteRows) {
  const std::string doc = kDoc;
  const size_t ends[3] = {doc.find("\"odd\": NaN\n    }") + 16,
                          doc.find("\"time_unit\": \"us\"\n    }") + 23,
                          doc.rfind("\"time_unit\": \"us\"\n    }") + 23};
  const size_t context_end = doc.find("\n  },") + 4;
  for (size_t cut = 0; cut <= doc.size(); ++cut) {
    const GbJsonDocument d = read_gb_json(std::string_view(doc).substr(0, cut));
    size_t expected = 0;
    for (size_t e : ends) expected += cut >= e ? 1 : 0;
    ASSERT_EQ(d.rows.size(), expected) << "cut at " << cut;
    EXPECT_EQ(d.context.has_value(), cut >= context_end) << "cut at " << cut;
    EXPECT_EQ(d.problem, "") << "cut at " << cut;
    EXPECT_EQ(d.complete, cut >= doc.rfind('}') + 1) << "cut at " << cut;
  }
}

TEST(GbJson, FedByteByByteSameAsAtOnce) {
  GbJsonReader r;
  std::vector<nlohmann::json> rows;
  for (char c : std::string(kDoc)) {
    r.feed(std::string_view(&c, 1));
    for (auto& row : r.take_rows()) rows.push_back(std::move(row));
  }
  EXPECT_EQ(rows, read_gb_json(kDoc).rows);
  EXPECT_TRUE(r.complete());
}

TEST(GbJson, GarbageIsAProblemNotACrash) {
  EXPECT_NE(read_gb_json("[1,2]").problem, "");
  EXPECT_TRUE(read_gb_json("not json at all").rows.empty());
  EXPECT_NE(read_gb_json(R"({"benchmarks": [ {"name": tru } ]})").problem, "");
  EXPECT_NE(read_gb_json("{} trailing").problem, "");
  EXPECT_EQ(read_gb_json("{}").problem, "");
}

}  // namespace
}  // namespace gptbench::runner
