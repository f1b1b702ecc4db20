"""Run Coq on a development: ``coq_makefile -f _CoqProject -o Makefile && make``, timed.

:func:`check_development` builds with ``make -j`` on the usable cores, shows a progress bar (tqdm, on
stderr, after 2 s; off with ``quiet`` or when stderr is not a terminal), and reports per-file and total times
(wall clock and CPU of the Coq processes), the peak memory of one Coq process, and the axioms that
``Print Assumptions certificate_holds`` lists.  :data:`STANDARD_AXIOMS` are the modules whose axioms
are expected (Coq's real numbers with functional extensionality, and excluded middle, which Flocq uses);
any other axiom makes the result not ``ok``: an ``Admitted`` lemma, and the axioms of Coq's primitive
integers and floats (the generated facts run Interval on integer floats, ``coq/IntervalZ.v``).
"""
from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from condcheck import progress
from condcheck.errors import CondcheckError

#: modules of the axioms that specify Coq's primitive integers and floats (Interval's default backends
#: compute with them; a development must not depend on them)
PRIMITIVE_AXIOMS = ("PrimInt63", "Uint63", "PrimFloat", "FloatAxioms")
#: modules whose axioms a development may use (first component of the printed name): Coq's real numbers
#: (ClassicalDedekindReals, FunctionalExtensionality) and excluded middle (Flocq's rounding lemmas use it)
STANDARD_AXIOMS = ("ClassicalDedekindReals", "FunctionalExtensionality", "Classical_Prop")

#: address-space limit of every Coq process (a runaway tactic fails instead of swapping the machine)
MEMORY_LIMIT_MB = 4096

_TIMED = re.compile(r"^(\S+\.vo) \(real: ([\d.]+), user: ([\d.]+), sys: ([\d.]+), mem: (\d+) ko\)")


@dataclass
class CoqResult:
    ok: bool
    seconds: float                 # wall clock of make
    cpu_seconds: float             # user + sys of every Coq process
    peak_memory_mb: float          # largest resident set of one Coq process
    files: dict = field(default_factory=dict)          # "X.vo" -> {"real", "user", "mem_mb", "built"}
    assumptions: list = field(default_factory=list)
    unexpected_assumptions: list = field(default_factory=list)
    log: str = ""
    versions: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"ok": self.ok, "seconds": round(self.seconds, 2), "cpu_seconds": round(self.cpu_seconds, 2),
                "peak_memory_mb": round(self.peak_memory_mb, 1), "assumptions": self.assumptions,
                "unexpected_assumptions": self.unexpected_assumptions, "versions": self.versions,
                "files": self.files, **({} if self.ok else {"log": self.log[-4000:]})}


def coq_available() -> bool:
    return all(shutil.which(t) for t in ("coqc", "coq_makefile", "make"))


def versions() -> dict:
    """Versions of Coq and Flocq on this machine ({} when coqc is missing)."""
    if not shutil.which("coqc"):
        return {}
    out = {}
    v = subprocess.run(["coqc", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\S+)", v)
    if m:
        out["coq"] = m.group(1)
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True).stdout.strip()
    flocq = Path(where) / "user-contrib" / "Flocq" / "Version.v"
    if flocq.exists():
        m = re.search(r'parse "([\d.]+)"', flocq.read_text())
        if m:
            out["flocq"] = m.group(1)
    return out


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                      # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def development_hash(directory) -> str:
    """SHA-256 of a development: _CoqProject and every .v file it lists, by relative path, in sorted order
    (a missing file is hashed as missing)."""
    d = Path(directory)
    project = d / "_CoqProject"
    if not project.exists():
        raise CondcheckError(f"{str(d)!r} has no _CoqProject; is it a development written by condcheck prove?")
    listed = [line.strip() for line in project.read_text().splitlines() if line.strip().endswith(".v")]
    h = hashlib.sha256()
    for rel in sorted(["_CoqProject", *listed]):
        p = d / rel
        h.update(rel.encode() + b"\0" + (p.read_bytes() if p.exists() else b"(missing)") + b"\0")
    return h.hexdigest()


def _children_usage():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _limit_memory(mb: int):
    def apply():
        limit = mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def check_development(directory, *, jobs: Optional[int] = None, quiet: bool = False,
                      timeout: Optional[float] = None, memory_limit_mb: int = MEMORY_LIMIT_MB) -> CoqResult:
    """Build the development in ``directory`` with Coq and read the assumptions of its theorem."""
    if not coq_available():
        raise CondcheckError("coqc, coq_makefile or make is not on PATH; install Coq with Flocq, Interval and "
                             "Coquelicot (Debian: apt-get install coq libcoq-flocq libcoq-interval "
                             "libcoq-coquelicot) or check the development later with "
                             "`coq_makefile -f _CoqProject -o Makefile && make`")
    d = Path(directory)
    project = d / "_CoqProject"
    if not project.exists():
        raise CondcheckError(f"{str(d)!r} has no _CoqProject; is it a development written by condcheck prove?")
    n_files = sum(1 for line in project.read_text().splitlines() if line.strip().endswith(".v"))
    jobs = jobs or usable_cores()
    mk = subprocess.run(["coq_makefile", "-f", "_CoqProject", "-o", "Makefile"], cwd=d, capture_output=True,
                        text=True)
    if mk.returncode != 0:
        raise CondcheckError(f"coq_makefile failed in {str(d)!r}: {mk.stderr.strip().splitlines()[-1:]}")
    cpu0, t0 = _children_usage(), time.perf_counter()
    show = progress.bar("coq", quiet, "file")
    proc = subprocess.Popen(["make", f"-j{jobs}", "TIMED=1"], cwd=d, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, preexec_fn=_limit_memory(memory_limit_mb))
    log, files = [], {}
    for line in proc.stdout:
        log.append(line)
        m = _TIMED.match(line.strip())
        if m:
            files[m.group(1)] = {"real": float(m.group(2)), "user": float(m.group(3)),
                                 "mem_mb": round(int(m.group(5)) / 1024, 1)}
            if show is not None:
                show(len(files), n_files)
        if timeout is not None and time.perf_counter() - t0 > timeout:
            proc.kill()
            log.append(f"condcheck: stopped after {timeout} s\n")
            break
    rc = proc.wait()
    if show is not None:
        show.close()
    for name, f in files.items():                      # `time` reports a file whose compilation failed too
        f["built"] = (d / name).exists()
    seconds = time.perf_counter() - t0
    ok = rc == 0
    assumptions, unexpected = [], []
    if ok:
        assumptions = print_assumptions(d)
        unexpected = unexpected_assumptions(assumptions)
        ok = not unexpected
    cpu = _children_usage() - cpu0
    peak = max((f["mem_mb"] for f in files.values()), default=0.0)
    return CoqResult(ok, seconds, cpu, peak, files, assumptions, unexpected, "".join(log), versions())


def unexpected_assumptions(names: list) -> list:
    """The axioms outside :data:`STANDARD_AXIOMS` (an admitted lemma, a primitive-number axiom, ...)."""
    return [a for a in names if a.split(".")[0] not in STANDARD_AXIOMS]


def print_assumptions(directory) -> list[str]:
    """The axioms ``Print Assumptions certificate_holds`` lists (names only)."""
    d = Path(directory)
    probe = d / "Assumptions.v"
    probe.write_text("From Cert Require Import Main.\nPrint Assumptions certificate_holds.\n")
    try:
        out = subprocess.run(["coqc", "-Q", ".", "Cert", "-Q", "lib", "Condcheck", "-w", "-all", "Assumptions.v"],
                             cwd=d, capture_output=True, text=True)
    finally:
        for p in d.glob("Assumptions.*"):
            p.unlink()
        for p in d.glob(".Assumptions.*"):
            p.unlink()
    if out.returncode != 0:
        raise CondcheckError(f"Print Assumptions failed in {str(d)!r}: {out.stderr.strip()[-300:]}")
    return parse_assumptions(out.stdout)


def parse_assumptions(text: str) -> list[str]:
    """Axiom names from the output of ``Print Assumptions`` ([] for "Closed under the global context")."""
    if "Closed under the global context" in text:
        return []
    names = []
    for line in text.splitlines():
        # an axiom starts at column 0 ("name : type" or "name" with the type on indented lines)
        m = re.match(r"^([A-Za-z_][\w.']*)(\s|$)", line)
        if m and m.group(1) != "Axioms":
            names.append(m.group(1))
    return names
