"""``condcheck prove``: write (and check with Coq) a development proving a certificate or a network claim."""
from __future__ import annotations

import json
import sys

import click

from condcheck.errors import CondcheckError

from . import coqrun


def _text(r) -> str:
    d = r.to_dict()
    lines = [f"{d['activation']} on {d['format']}: Coq development written to {d['directory']}",
             f"theorem certificate_holds : {d['statement']}",
             f"facts: {d['facts']['sigma']} values of sigma~, {d['facts']['dsigma']} of sigma~'; "
             f"development sha256 {d['development_sha256'][:16]}..."]
    c = d["coq"]
    if c is None:
        lines.append("Coq: not run")
    else:
        v = c.get("versions", {})
        where = f"Coq {v.get('coq', '?')}, Flocq {v.get('flocq', '?')}"
        if c["ok"]:
            names = ", ".join(h["name"] for h in d["hypotheses"])
            under = f" under the hypotheses {names}" if names else ""
            lines.append(f"kernel-checked by {where}{under}: {c['seconds']:.1f} s wall, "
                         f"{c['cpu_seconds']:.1f} s CPU, "
                         f"peak {c['peak_memory_mb']:.0f} MiB")
            lines.append("Print Assumptions certificate_holds: " + assumptions_text(c["assumptions"]))
        elif c["unexpected_assumptions"]:
            lines.append(f"REJECTED: unexpected assumptions {assumptions_text(c['unexpected_assumptions'])}")
        else:
            tail = [ln for ln in c.get("log", "").splitlines() if ln.strip()][-6:]
            lines.append(f"REJECTED by {where}:\n  " + "\n  ".join(tail))
    lines += [f"hypothesis {h['name']} (not proved): {h['meaning']}" for h in d["hypotheses"]]
    lines += d["notes"]
    return "\n".join(lines)


def assumptions_text(names: list) -> str:
    """The axioms printed; those that specify Coq's primitive integers and floats (Interval's default
    backends compute with them; a development that depends on them is rejected) as a count per module."""
    primitive = {}
    for n in names:
        if n.split(".")[0] in coqrun.PRIMITIVE_AXIOMS:
            primitive[n.split(".")[0]] = primitive.get(n.split(".")[0], 0) + 1
    rest = [n for n in names if n.split(".")[0] not in primitive]
    counts = ", ".join(f"{primitive[m]} {m}" for m in coqrun.PRIMITIVE_AXIOMS if m in primitive)
    text = ", ".join(rest) + (f"; of the primitive integers and floats: {counts}" if primitive else "")
    return text or "none (closed under the global context)"


@click.command("prove")
@click.argument("activation", required=False)
@click.argument("format", required=False)
@click.option("--certificate", type=click.Path(dir_okay=False), help="Prove this certificate (condcheck check --json).")
@click.option("--network", type=click.Path(dir_okay=False), help="Prove the claim of this network file.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Directory to write the development into.")
@click.option("--no-run", is_flag=True, help="Only write the development; do not run Coq.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Parallel Coq jobs (default: usable cores).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--no-precheck", is_flag=True,
              help="Write the development of a certificate without re-checking it first (Coq is then the only judge).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def prove_cmd(activation, format, certificate, network, out, no_run, jobs, quiet, no_precheck, as_json):
    """Write a Coq development (Flocq + Interval + Coquelicot) proving a pair's certificate, then check it.

    \b
    Examples:
      condcheck prove sigmoid float4_e2m1fn --out proof/
      condcheck prove --certificate gelu_e4m3.json --out proof/
      condcheck prove --network net.json --out proof/
    The development is checked by `coq_makefile -f _CoqProject -o Makefile && make`; condcheck runs that
    when coqc is on PATH.  Exit status: 0 accepted by Coq, 1 rejected, 2 bad input, 3 written but not checked.
    """
    given = [name for name, v in (("ACTIVATION FORMAT", activation), ("--certificate", certificate),
                                  ("--network", network)) if v]
    if len(given) != 1:
        raise CondcheckError("give exactly one of ACTIVATION FORMAT, --certificate CERT.json or --network NET.json "
                             f"(got {', '.join(given) or 'none'})")
    if activation and not format:
        raise CondcheckError("give ACTIVATION and FORMAT, e.g. `condcheck prove relu float8_e4m3 --out DIR`")
    if no_precheck and not certificate:
        raise CondcheckError("--no-precheck applies to --certificate only")
    from .coqrun import coq_available
    run = not no_run and coq_available()
    if network:
        from .network_proof import prove_network
        r = prove_network(network, out, run=run, jobs=jobs, quiet=quiet)
    elif certificate:
        from .api import prove_certificate
        r = prove_certificate(certificate, out, precheck_first=not no_precheck, run=run, jobs=jobs, quiet=quiet)
    else:
        from .api import prove
        r = prove(activation, format, out, run=run, jobs=jobs, quiet=quiet)
    if not no_run and not run:
        r.notes.append("coqc is not on PATH: not checked; check it later with "
                       "`coq_makefile -f _CoqProject -o Makefile && make` in the directory")
    click.echo(json.dumps(r.to_dict(), indent=1) if as_json else _text(r))
    sys.exit(3 if r.ok is None else (0 if r.ok else 1))
