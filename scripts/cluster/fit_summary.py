#!/usr/bin/env python3
"""How many rows of cost_model_check.py --fit-from runs the fitted model predicts within a bound.

    scripts/cluster/fit_summary.py CHECK_N8.json... [--bound 0.25]

Per file and in total: rows whose fitted error is within the bound (the target: every row
within 25 %), the same for the presets "auto" chooses among, and the range of the errors.
"""

import argparse
import json
import os

AUTO_CANDIDATES = {"dense", "micro", "exdyna", "cltk"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("checks", nargs="+", help="cost_model_check.py --out JSON with fitted rows")
    p.add_argument("--bound", type=float, default=0.25)
    args = p.parse_args()
    total = within = candidates = candidates_within = 0
    for path in args.checks:
        with open(path, encoding="utf-8") as f:
            rows = [r for r in json.load(f)["rows"] if "fitted_error" in r]
        if not rows:
            print("%s: no fitted rows" % os.path.basename(path))
            continue
        ok = [r for r in rows if abs(r["fitted_error"]) <= args.bound]
        cand = [r for r in rows if r["algorithm"] in AUTO_CANDIDATES]
        cand_ok = [r for r in cand if abs(r["fitted_error"]) <= args.bound]
        errors = [r["fitted_error"] for r in rows]
        print("%s: %d of %d rows within %.0f %% (auto's candidates: %d of %d); errors %+.0f %% "
              ".. %+.0f %%" % (os.path.basename(path), len(ok), len(rows), 100 * args.bound,
                               len(cand_ok), len(cand), 100 * min(errors), 100 * max(errors)))
        total += len(rows)
        within += len(ok)
        candidates += len(cand)
        candidates_within += len(cand_ok)
    print("total: %d of %d rows within %.0f %% (auto's candidates: %d of %d)" %
          (within, total, 100 * args.bound, candidates_within, candidates))


if __name__ == "__main__":
    main()
