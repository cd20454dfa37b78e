import json
import os
import tempfile
import unittest

from peers import gb_json


class GbJson(unittest.TestCase):
    def rows(self):
        return [gb_json.iteration_row("f/x", 0, i, 3, 10, t, t / 2, {"bytes/s": b})
                for i, (t, b) in enumerate(((1e-3, 2.0), (2e-3, 4.0), (3e-3, 6.0)))]

    def test_iteration_rows_in_microseconds_with_manual_time_names(self):
        r = self.rows()[0]
        self.assertEqual((r["name"], r["run_name"], r["time_unit"]),
                         ("f/x/manual_time", "f/x/manual_time", "us"))
        self.assertAlmostEqual(r["real_time"], 1000.0)
        self.assertEqual((r["repetitions"], r["repetition_index"], r["iterations"]), (3, 0, 10))

    def test_aggregates_mean_median_stddev_cv(self):
        agg = {r["aggregate_name"]: r for r in gb_json.aggregate_rows(self.rows())}
        self.assertEqual(sorted(agg), ["cv", "mean", "median", "stddev"])
        self.assertAlmostEqual(agg["mean"]["real_time"], 2000.0)
        self.assertAlmostEqual(agg["median"]["bytes/s"], 4.0)
        self.assertAlmostEqual(agg["stddev"]["real_time"], 1000.0)
        self.assertAlmostEqual(agg["cv"]["real_time"], 0.5)
        self.assertEqual(agg["cv"]["aggregate_unit"], "percentage")
        self.assertEqual(agg["mean"]["name"], "f/x/manual_time_mean")
        self.assertEqual(agg["mean"]["run_type"], "aggregate")

    def test_errored_row_carries_the_reason(self):
        r = gb_json.errored_row("f/y", 1, "skipped: needs a GPU")
        self.assertTrue(r["error_occurred"])
        self.assertEqual((r["error_message"], r["iterations"]), ("skipped: needs a GPU", 0))

    def test_writer_streams_rows_and_closes_a_valid_document(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.json")
            w = gb_json.Writer(path, gb_json.context({"device": "cpu"}))
            w.add(self.rows()[:1])
            with open(path, encoding="utf-8") as f:
                partial = f.read()
            self.assertIn('"f/x/manual_time"', partial)  # flushed before the end
            w.add([gb_json.errored_row("f/y", 1, "skipped: why")])
            w.close()
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        self.assertEqual(doc["context"]["device"], "cpu")
        self.assertEqual([r["name"] for r in doc["benchmarks"]], ["f/x/manual_time", "f/y/manual_time"])


if __name__ == "__main__":
    unittest.main()
