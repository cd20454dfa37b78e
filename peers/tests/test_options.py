import os
import tempfile
import unittest

from peers.options import UsageError, parse


class Options(unittest.TestCase):
    def test_device_dependent_defaults(self):
        cpu = parse([], cuda_available=False)
        self.assertEqual((cpu.cuda, cpu.models, cpu.batch, cpu.seq), (False, ["tiny"], 2, 64))
        gpu = parse([], cuda_available=True)
        self.assertEqual((gpu.cuda, gpu.models, gpu.batch, gpu.seq), (True, ["small"], 8, 1024))
        self.assertFalse(parse(["--gptbench_device=cpu"], cuda_available=True).cuda)

    def test_gptbench_flags_and_short_forms(self):
        o = parse(["--benchmark_filter=softmax/", "--benchmark_out=x.json",
                   "--benchmark_repetitions=3", "--min_time=0.25s", "--full", "--models=small,medium",
                   "--gptbench_batch=4", "--seq=128", "--benchmark_out_format=json"], False)
        self.assertEqual((o.filter, o.out, o.repetitions, o.min_time, o.full),
                         ("softmax/", "x.json", 3, 0.25, True))
        self.assertEqual((o.models, o.batch, o.seq, o.tokens), (["small", "medium"], 4, 128, 512))

    def test_gptbench_own_flags_are_ignored(self):
        o = parse(["--gptbench_flush_l2=true", "--benchmark_display_aggregates_only=true"], False)
        self.assertEqual(o.filter, "")

    def test_dtypes_keep_the_order_given_and_drop_others(self):
        o = parse(["--gptbench_dtypes=bf16,tf32,fp32"], False)
        self.assertEqual(o.dtypes_among(("fp32", "bf16")), ["bf16", "fp32"])

    def test_profile_directory_is_made_or_refused(self):
        with tempfile.TemporaryDirectory() as d:
            sub = os.path.join(d, "traces")
            self.assertEqual(parse([f"--gptbench_profile={sub}"], False).profile_dir, sub)
            self.assertTrue(os.path.isdir(sub))
            afile = os.path.join(d, "file")
            open(afile, "w").close()
            with self.assertRaisesRegex(UsageError, "--gptbench_profile="):
                parse([f"--gptbench_profile={afile}/below"], False)

    def test_bad_input_is_a_usage_error_naming_the_flag(self):
        for argv, flag in ((["--gptbench_device=tpu"], "--gptbench_device"),
                           (["--benchmark_min_time=fast"], "--benchmark_min_time"),
                           (["--benchmark_repetitions=0"], "--benchmark_repetitions"),
                           (["--gptbench_models=huge"], "--gptbench_models"),
                           (["--benchmark_filter=(["], "--benchmark_filter"),
                           (["--benchmark_out_format=csv"], "--benchmark_out_format"),
                           (["--gptbench_compile_backend=tvm"], "--gptbench_compile_backend"),
                           (["--gptbench_device=cuda"], "--gptbench_device"),
                           (["stray"], "stray")):
            with self.subTest(argv=argv):
                with self.assertRaises(UsageError) as e:
                    parse(argv, cuda_available=False)
                self.assertIn(flag, str(e.exception))
                self.assertNotIn("\n", str(e.exception))


if __name__ == "__main__":
    unittest.main()
