"""Prove every paper activation on every named format of at most 8 bits (with ``--wide``: on bfloat16,
float16, float32 and float64) with Coq, and record the times (docs/proofs.md reports the results).

    python benchmarks/prove_matrix.py OUTDIR [--jobs N] [--wide] [--formats F1,F2] [ACT ...]

For every (activation, format) it runs ``condcheck.prove`` into a temporary directory and writes
OUTDIR/ACT-FORMAT.json: the verdicts proved, the number of facts, Coq's wall and CPU seconds, the peak
memory of one Coq process, the axioms ``Print Assumptions certificate_holds`` printed and the
development's hash.  A pair whose JSON file exists is skipped (restartable); ``--table`` prints the
Markdown table of OUTDIR's results.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path


def prove_pair(act: str, fmt: str, jobs) -> dict:
    from condcheck.check import check_activation
    from condcheck.proofs import prove
    verdicts = {k: v["verdict"] for k, v in check_activation(act, fmt).conditions.items()}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        r = prove(act, fmt, f"{d}/dev", jobs=jobs, quiet=True)
    c = r.coq or {}
    return {"activation": act, "format": fmt, "verdicts": verdicts, "ok": r.ok, "facts": r.facts,
            "coq_seconds": c.get("seconds"), "coq_cpu_seconds": c.get("cpu_seconds"),
            "peak_memory_mb": c.get("peak_memory_mb"), "assumptions": c.get("assumptions"),
            "development_sha256": r.development_hash, "total_seconds": round(time.perf_counter() - t0, 1),
            "hypotheses": [h["name"] for h in r.hypotheses],
            **({} if r.ok else {"log": c.get("log", "")[-2000:]})}


def table(outdir: Path) -> str:
    rows = ["| activation | format | verdicts (1, 2, 3) | facts | Coq CPU s | Coq wall s | peak MiB | accepted | "
            "hypotheses |", "|---|---|---|---|---|---|---|---|---|"]
    for p in sorted(outdir.glob("*.json")):
        r = json.loads(p.read_text())
        v = ", ".join(r["verdicts"][k] for k in ("1", "2", "3"))
        rows.append(f"| {r['activation']} | {r['format']} | {v} | {r['facts']['sigma']} + {r['facts']['dsigma']} | "
                    f"{r['coq_cpu_seconds']:.1f} | {r['coq_seconds']:.1f} | {r['peak_memory_mb']:.0f} | "
                    f"{'yes' if r['ok'] else 'NO'} | {', '.join(r.get('hypotheses') or []) or 'none'} |")
    return "\n".join(rows)


def main(argv):
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    outdir = Path(argv[0])
    if "--table" in argv:
        print(table(outdir))
        return
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else None
    from condcheck.activations import PAPER_ACTIVATIONS
    from condcheck.formats import get_format, known_format_names
    fmts = argv[argv.index("--formats") + 1].split(",") if "--formats" in argv else None
    skip = set(fmts or ()) | {",".join(fmts or ())}
    acts = [a for a in argv[1:] if not a.startswith("-") and not a.isdigit() and a not in skip] \
        or list(PAPER_ACTIVATIONS)
    outdir.mkdir(parents=True, exist_ok=True)
    wide = "--wide" in argv
    small = fmts or sorted((n for n in known_format_names() if (get_format(n).bits > 8) == wide),
                           key=lambda n: get_format(n).bits)
    for fmt in small:                                   # the smallest first
        for act in acts:
            path = outdir / f"{act}-{fmt}.json"
            if path.exists():
                continue
            r = prove_pair(act, fmt, jobs)
            path.write_text(json.dumps(r, indent=1))
            print(f"{act:8s} {fmt:20s} ok={r['ok']} Coq {r['coq_cpu_seconds']} s CPU, {r['coq_seconds']} s wall, "
                  f"peak {r['peak_memory_mb']} MB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
