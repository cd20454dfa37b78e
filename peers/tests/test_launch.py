"""launch:graph and launch:eager on the CPU: the graph row skipped with its reason, a capture
that fails, host_overhead_pct, and the replay-against-eager check, with a fake graph in place of
torch.cuda's."""
import statistics
import time
import unittest
from unittest import mock

import torch

from peers import launch, runner
from peers.case import COPY, LAUNCHES, Case, Spec
from peers.tests.test_runner import PEAKS, options

CAPTURE_ERROR = "operation not permitted when stream is capturing"


class FakeGraphs:
    """As launch.CudaGraphs: capture() calls run once while `capturing` (then fails as
    torch.cuda.graph's exit does if run raised) and then `captured` (to keep what the capture
    wrote); replay() calls `replay`."""

    def __init__(self, replay=lambda: None, captured=lambda: None):
        self.capturing, self.replay, self.captured = False, replay, captured

    def available(self, device):
        return True

    def capture(self, run, device):
        self.capturing = True
        try:
            run()
        except Exception:
            raise RuntimeError("operation failed due to a previous error during capture")
        finally:
            self.capturing = False
        self.captured()
        return mock.Mock(replay=self.replay)


def spec_of(make):
    return Spec("f/impl/x", make, LAUNCHES)


def rows_by_launch(rows):
    return {r["name"].split("/launch:")[1].split("/")[0]: r for r in rows if r["run_type"] == "iteration"}


class Names(unittest.TestCase):
    def test_two_names_graph_first_and_the_filter_narrows(self):
        spec = spec_of(lambda: None)
        self.assertEqual(spec.names(), [("graph", "f/impl/x/launch:graph"),
                                        ("eager", "f/impl/x/launch:eager")])
        self.assertEqual(Spec("f/impl/y", lambda: None).names(), [(None, "f/impl/y")])
        from peers.cli import selected
        kept = selected([spec], "launch:eager")
        self.assertEqual(kept[0].names(), [("eager", "f/impl/x/launch:eager")])


class CpuRows(unittest.TestCase):
    def test_graph_row_is_skipped_on_the_cpu_and_the_eager_row_runs(self):
        spec = spec_of(lambda: Case(run=lambda: None, bytes=8.0, peak=COPY,
                                    outputs=lambda: {"y": torch.zeros(2)}))
        rows = runner.run_spec(spec, options(), PEAKS, 5)
        self.assertEqual([r["name"] for r in rows], ["f/impl/x/launch:graph/manual_time",
                                                    "f/impl/x/launch:eager/manual_time"])
        graph, eager = rows
        self.assertEqual(graph["error_message"],
                         "skipped: launch:graph needs a CUDA GPU (this run is on the CPU)")
        self.assertEqual((graph["family_index"], eager["family_index"]), (5, 6))
        self.assertNotIn("error_message", eager)
        self.assertGreater(eager["real_time"], 0)
        self.assertNotIn("host_overhead_pct", eager)


class FailedCapture(unittest.TestCase):
    def test_a_host_sync_in_the_region_skips_the_graph_row_with_the_reason(self):
        fake, calls = FakeGraphs(), []

        def run():
            if fake.capturing:  # as .item() or a synchronize inside a capture
                raise RuntimeError(CAPTURE_ERROR + "\nmore lines")
            calls.append(1)
        with mock.patch.object(launch, "GRAPHS", fake):
            rows = runner.run_spec(spec_of(lambda: Case(run=run, bytes=8.0, peak=COPY)),
                                   options(), PEAKS, 0)
        graph, eager = rows
        self.assertEqual(graph["error_message"],
                         f"skipped: cannot be captured in a CUDA graph (RuntimeError: {CAPTURE_ERROR})")
        self.assertNotIn("error_message", eager)
        self.assertGreater(eager["iterations"], 0)
        self.assertGreater(len(calls), 6)


class HostOverhead(unittest.TestCase):
    def test_from_the_medians_of_both_forms(self):
        self.assertAlmostEqual(launch.host_overhead_pct([1.0, 2.0, 9.0], [10.0, 10.0, 4.0]), 80.0)
        self.assertEqual(launch.host_overhead_pct([1.0], [0.0]), 0.0)

    def test_both_rows_carry_it_from_the_same_preparation(self):
        x = torch.ones(4)
        st = {}

        def run():
            time.sleep(0.0003)  # host work the replay does not repeat
            st["y"] = x * 2

        at_capture = {}
        fake = FakeGraphs(lambda: at_capture["y"].copy_(x * 2), lambda: at_capture.update(st))
        spec = spec_of(lambda: Case(run=run, bytes=8.0, peak=COPY, label="backend=eager",
                                    outputs=lambda: dict(st)))
        with mock.patch.object(launch, "GRAPHS", fake):
            rows = runner.run_spec(spec, options(repetitions=3), PEAKS, 0)
        self.assertEqual([r["run_type"] for r in rows], (["iteration"] * 3 + ["aggregate"] * 4) * 2)
        self.assertTrue(all("error_message" not in r for r in rows))
        times = {f: [r["real_time"] for r in rows if r["run_type"] == "iteration" and f in r["name"]]
                 for f in ("launch:graph", "launch:eager")}
        want = 100 * (1 - statistics.median(times["launch:graph"]) / statistics.median(times["launch:eager"]))
        it = [r for r in rows if r["run_type"] == "iteration"]
        for r in it:
            self.assertAlmostEqual(r["host_overhead_pct"], want, places=6)
        self.assertGreater(want, 0)
        by = rows_by_launch(rows)
        self.assertEqual(by["graph"]["label"], f"backend=eager; {launch.GRAPH_LABEL}")
        self.assertEqual(by["eager"]["label"], "backend=eager")


class ReplayCheck(unittest.TestCase):
    def test_an_unwritten_output_fails_and_the_eager_row_still_runs(self):
        x, st, at_capture = torch.arange(4.0), {}, {}

        def run():
            st["y"], st["z"] = x * 2, x + 1

        fake = FakeGraphs(lambda: at_capture["y"].copy_(x * 2),  # z is never written
                          lambda: at_capture.update(st))
        spec = spec_of(lambda: Case(run=run, bytes=8.0, peak=COPY, outputs=lambda: dict(st)))
        with mock.patch.object(launch, "GRAPHS", fake):
            graph, eager = runner.run_spec(spec, options(), PEAKS, 0)
        self.assertEqual(graph["error_message"], "wrong result: launch:graph replay against an "
                                                 "eager call: z: relative error nan exceeds 1e-05")
        self.assertNotIn("error_message", eager)

    def test_tolerance_by_dtype(self):
        self.assertEqual([launch.replay_tolerance(t) for t in (torch.bfloat16, torch.float32, torch.float64)],
                         [2.0 ** -8, 1e-5, 1e-12])

    def test_in_place_state_starts_both_from_the_same_snapshot(self):
        p = torch.zeros(3)
        case = Case(run=lambda: p.add_(1), state=lambda: {"p": p})
        self.assertEqual(launch.check_replay(case, mock.Mock(replay=lambda: p.add_(1))), "")
        self.assertEqual(p.tolist(), [1.0] * 3)  # one eager step from the snapshot
        wrong = launch.check_replay(case, mock.Mock(replay=lambda: None))
        self.assertTrue(wrong.startswith("p: relative error"), wrong)


class Families(unittest.TestCase):
    """The families' outputs and state, checked with a replay that rewrites the captured tensors
    (as a graph does) and with one that leaves one of them unwritten."""

    def copying_replay(self, case, skip=()):
        case.run()
        captured = case.outputs()

        def replay():
            case.run()
            for k, t in case.outputs().items():
                if k not in skip:
                    captured[k].detach().copy_(t)
        return mock.Mock(replay=replay)

    def test_layernorm_and_loss_outputs(self):
        from peers.families import layernorm, loss
        o = options(backend="eager")
        ln = layernorm.make("fp32", True, 64, 16, o)
        self.assertEqual(launch.check_replay(ln, self.copying_replay(ln)), "")
        self.assertTrue(launch.check_replay(ln, self.copying_replay(ln, skip={"dgamma"}))
                        .startswith("dgamma: relative error nan"))
        ce = loss.make("fp32", True, 32, 100, 128, o)
        self.assertEqual(launch.check_replay(ce, self.copying_replay(ce)), "")

    def test_optimizer_state(self):
        from peers.families import optim
        case = optim.make("adamw", "tiny", options(backend="eager"))
        case.run()
        self.assertIn("exp_avg_sq 0", case.state())
        self.assertEqual(launch.check_replay(case, mock.Mock(replay=case.run)), "")
        self.assertIn("relative error", launch.check_replay(case, mock.Mock(replay=lambda: None)))


if __name__ == "__main__":
    unittest.main()
