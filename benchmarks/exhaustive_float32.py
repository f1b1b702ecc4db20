"""Run the exhaustive float32 checks one after another and record them (docs/scale.md reports the results).

    python benchmarks/exhaustive_float32.py OUTDIR ACT:IMPL [ACT:IMPL ...] [--workers N]

For every ACT:IMPL (e.g. ``tanh:torch``, ``gelu:exact``) it runs ``condcheck check ACT float32 -i IMPL
--method exhaustive --json`` in a fresh process and writes OUTDIR/ACT-IMPL.json: the certificate, the wall
time, and for ``exact`` the symbolic certificate beside it (OUTDIR/ACT-symbolic.json) with a comparison of
the verdicts and witnesses.  A case whose JSON file exists is skipped (the runs take hours: restartable).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _check(act, impl, method, workers):
    cmd = [sys.executable, "-m", "condcheck", "check", act, "float32", "-i", impl, "--method", method, "--json", "-q"]
    if method == "exhaustive" and workers:
        cmd += ["--workers", str(workers)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode not in (0, 1, 3):
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1], "wall_seconds": round(wall, 1)}
    cert = json.loads(out.stdout)
    return {"certificate": cert, "wall_seconds": round(wall, 1)}


def compare(exhaustive: dict, symbolic: dict) -> dict:
    """Per condition: both verdicts and whether the witnesses are equal."""
    out = {}
    for k in "123":
        e, s = exhaustive["conditions"][k], symbolic["conditions"][k]
        out[k] = {"exhaustive": e["verdict"], "symbolic": s["verdict"],
                  "witness_equal": e.get("witness") == s.get("witness"),
                  "exhaustive_witness": e.get("witness"), "symbolic_witness": s.get("witness")}
    return out


def main(argv):
    workers = None
    if "--workers" in argv:
        i = argv.index("--workers")
        workers = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    outdir, cases = argv[0], argv[1:]
    os.makedirs(outdir, exist_ok=True)
    for case in cases:
        act, impl = case.split(":")
        path = os.path.join(outdir, f"{act}-{impl}.json")
        if os.path.exists(path):
            continue
        res = _check(act, impl, "exhaustive", workers)
        if impl == "exact" and "certificate" in res:
            spath = os.path.join(outdir, f"{act}-symbolic.json")
            sym = _check(act, "exact", "symbolic", None)
            with open(spath, "w") as fh:
                json.dump(sym, fh, indent=1)
            if "certificate" in sym:
                res["agreement"] = compare(res["certificate"], sym["certificate"])
        with open(path, "w") as fh:
            json.dump(res, fh, indent=1)
        verdicts = ({k: v["verdict"] for k, v in res["certificate"]["conditions"].items()}
                    if "certificate" in res else res.get("error"))
        print(f"{act} {impl}: {res['wall_seconds']} s {verdicts}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
