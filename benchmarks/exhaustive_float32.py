"""Run the exhaustive float32 checks one after another and record them (docs/scale.md reports the results).

    python benchmarks/exhaustive_float32.py OUTDIR ACT:IMPL [ACT:IMPL ...] [--workers N]
    python benchmarks/exhaustive_float32.py OUTDIR --table

For every ACT:IMPL (e.g. ``tanh:torch``, ``gelu:exact``) it runs ``condcheck check ACT float32 -i IMPL
--method exhaustive --json`` in a fresh process and writes OUTDIR/ACT-IMPL.json: the certificate, the wall
time, and for ``exact`` the symbolic certificate beside it (OUTDIR/ACT-symbolic.json) with a comparison of
the verdicts and witnesses.  A case whose JSON file exists is skipped (the runs take hours: restartable).
``--table`` prints the records of OUTDIR as the Markdown table of docs/scale.md.
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


def table(outdir) -> str:
    """The Markdown table of every ACT-IMPL.json record in ``outdir`` (docs/scale.md)."""
    rows = ["| activation | implementation | C1 | C2 | C3 | z_d (C1) | dead values | chunk CPU s | wall s | "
            "peak per worker | exact = symbolic |", "|" + "---|" * 11]
    for name in sorted(os.listdir(outdir)):
        if not name.endswith(".json") or name.endswith("-symbolic.json") or "-" not in name:
            continue
        with open(os.path.join(outdir, name)) as fh:
            rec = json.load(fh)
        if "certificate" not in rec:
            continue
        c = rec["certificate"]
        e = c.get("enumeration") or {}
        w1 = c["conditions"]["1"]["witness"]
        peaks = sorted((e.get("worker_peak_mib") or {}).values())
        agree = ""
        if "agreement" in rec:
            a = rec["agreement"]
            same = all(v["exhaustive"] == v["symbolic"] for v in a.values())
            tail = all((v["exhaustive_witness"] or {}).get(f) == (v["symbolic_witness"] or {}).get(f)
                       for v in a.values() for f in ("z_dead", "L", "dead_count"))
            agree = ("verdicts equal" if same else "VERDICTS DIFFER") + ("; z_d, L and the dead count equal"
                                                                         if tail else "; dead tails differ")
        rows.append(f"| {c['activation']} | `{c['implementation']}` | "
                    + " | ".join(c["conditions"][k]["verdict"] for k in "123")
                    + f" | {w1['z_dead']['hex'] if w1 else '-'} | {format(w1['dead_count'], ',') if w1 else '-'} | "
                    f"{format(round(e['chunk_cpu_seconds']), ',') if e.get('chunk_cpu_seconds') else '?'} | "
                    f"{format(round(rec['wall_seconds']), ',')} | "
                    f"{' / '.join(f'{p:.0f}' for p in peaks)} MiB | {agree} |")
    return "\n".join(rows)


def main(argv):
    if len(argv) == 2 and argv[1] == "--table":
        print(table(argv[0]))
        return
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
