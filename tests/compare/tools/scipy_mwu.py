# Prints the scipy reference values hard-coded in tests/compare/stats_test.cpp.
# python3 -m venv /tmp/sp && /tmp/sp/bin/pip install scipy numpy && /tmp/sp/bin/python scipy_mwu.py
import numpy as np
from scipy.stats import mannwhitneyu
rng = np.random.default_rng(7)
cases = {
 "exact_3v3_disjoint": ([1,2,3],[4,5,6]),
 "exact_3v3_one_swap": ([1,2,4],[3,5,6]),
 "exact_5v7": (list(np.round(rng.normal(100,5,5),3)), list(np.round(rng.normal(104,5,7),3))),
 "exact_3v50": (list(np.round(rng.normal(100,5,3),4)), list(np.round(rng.normal(101,5,50),4))),
 "exact_8v8": (list(np.round(rng.normal(100,3,8),4)), list(np.round(rng.normal(103,3,8),4))),
 "asymptotic_9v9": (list(np.round(rng.normal(100,3,9),4)), list(np.round(rng.normal(103,3,9),4))),
 "asymptotic_ties_4v5": ([1.0,2.0,2.0,3.0],[2.0,3.0,4.0,4.0,5.0]),
 "asymptotic_ties_10v12": (list(np.round(rng.normal(10,1,10))), list(np.round(rng.normal(11,1,12)))),
 "asymptotic_30v40": (list(np.round(rng.normal(50,4,30),3)), list(np.round(rng.normal(51,4,40),3))),
 "all_tied": ([5.0,5.0,5.0],[5.0,5.0]),
 "one_v_one": ([1.0],[2.0]),
}
for k,(x,y) in cases.items():
    r = mannwhitneyu(x,y,alternative='two-sided')
    print(k, "x=",[float(v) for v in x], "y=",[float(v) for v in y], "U1=%r p=%.17g" % (float(r.statistic), float(r.pvalue)))
