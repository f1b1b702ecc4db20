"""``prove``: check a pair (or take a certificate), write the Coq development, run Coq on it.

A certificate is re-checked before anything is written (:func:`precheck`): every rounded value it
states is recomputed, its clauses are re-checked by ``condcheck recheck``, and each verdict must be
condcheck's own.  A false certificate is refused with the reason.  ``precheck=False`` writes the
development anyway (for tests and for the curious): Coq then rejects it, since every statement is
re-proved there from the definitions.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Optional, Union

from condcheck.errors import CondcheckError, FormatOverflowError

from .certificate import Claims, load_certificate, read_claims


@dataclass
class ProofResult:
    directory: str
    activation: str
    format: str
    statement: str                     # the theorem's statement, as in Main.v
    facts: dict                        # {"sigma": n, "dsigma": n}
    development_hash: str
    coq: Optional[dict] = None         # CoqResult.to_dict(), when Coq ran
    notes: list = field(default_factory=list)
    verdicts: Optional[dict] = None    # "1", "2", "3" -> "holds" / "fails" (certificates; None for networks)
    hypotheses: list = field(default_factory=list)   # premises of certificate_holds: {"name", "statement", "meaning"}

    @property
    def ok(self) -> Optional[bool]:
        return None if self.coq is None else bool(self.coq["ok"])

    @classmethod
    def from_dict(cls, d: dict) -> "ProofResult":
        """The result :meth:`to_dict` (or a development's ``proof.json``) holds."""
        return cls(d["directory"], d["activation"], d["format"], d["statement"], d["facts"], d["development_sha256"],
                   d.get("coq"), list(d.get("notes", [])), d.get("verdicts"), list(d.get("hypotheses", [])))

    def to_dict(self) -> dict:
        return {"schema": "condcheck.prove/1", "directory": self.directory, "activation": self.activation,
                "format": self.format, "statement": self.statement, "facts": self.facts,
                "development_sha256": self.development_hash, "verdicts": self.verdicts, "coq": self.coq,
                "notes": self.notes, "hypotheses": self.hypotheses}


def _claimed_values(claims: Claims):
    """(what, point, derivative, claimed value) for every rounded value the certificate states."""
    fmt = claims.format
    w1, w2, w3 = (claims.witnesses.get(k) for k in ("1", "2", "3"))
    if w1 is not None:
        yield "Condition 1 L = sigma~(-Omega)", -fmt.max, False, w1.L
        yield "Condition 1 sigma~(live)", w1.live, False, w1.sigma_live
        yield "Condition 1 sigma~(constant)", w1.constant, False, w1.sigma_constant
        yield "Condition 1 sigma~(zero)", w1.zero, False, Fraction(0)
        yield "Condition 1 sigma~'(pass)", w1.pass_state, True, w1.dsigma_pass
    if w2 is not None:
        yield "Condition 2 sigma~(delta_0)", w2.delta_0, False, w2.sigma_0
        yield "Condition 2 sigma~(delta_1)", w2.delta_1, False, w2.sigma_1
        yield "Condition 2 sigma~'(delta_0)", w2.delta_0, True, w2.dsigma_0
        yield "Condition 2 sigma~'(delta_1)", w2.delta_1, True, w2.dsigma_1
    if w3 is not None:
        yield ("Condition 3 sigma~'(0)" if w3.route == "a" else "Condition 3 sigma~'(x)",
               Fraction(0) if w3.route == "a" else w3.x, True, w3.dsigma_at)
        yield "Condition 3 sigma~(-s)", -w3.s, False, w3.sigma_minus_s
        yield "Condition 3 sigma~(0)", Fraction(0), False, w3.sigma_0
        yield "Condition 3 sigma~(s)", w3.s, False, w3.sigma_s


def precheck(cert: dict, claims: Claims) -> list[str]:
    """What is false in a certificate ([] when everything it states is condcheck's own result)."""
    from condcheck.check import check_activation
    from condcheck.recheck import recheck_certificate
    from condcheck.rounded_activation import get_rounded
    from condcheck.rounding import round_or_none
    fmt = claims.format
    problems = []
    r = get_rounded(claims.activation, fmt, claims.implementation)
    for what, z, deriv, claimed in _claimed_values(claims):
        if not fmt.contains(z):
            problems.append(f"{what}: the point {z} is not a value of {fmt.name}")
            continue
        try:
            actual = r.derivative(z) if deriv else r.value(z)
        except FormatOverflowError:
            actual = None
        if actual != claimed:
            problems.append(f"{what} is {actual} at {z}, not {claimed}")
    w3 = claims.witnesses.get("3")
    if w3 is not None:
        s = w3.zeta if w3.route == "a" else round_or_none(w3.zeta + abs(w3.x), fmt)
        if s != w3.s:
            problems.append(f"Condition 3 s is {s}, not {w3.s}")
    try:
        re = recheck_certificate(cert)
        if not re["ok"]:
            p = re["problem"] or {}
            problems.append(f"recheck: {p.get('statement')}: {p.get('problem')}")
    except CondcheckError as e:
        problems.append(f"recheck: {e}")
    own = check_activation(claims.activation, fmt, claims.implementation)
    for k in ("1", "2", "3"):
        if own.conditions[k]["holds"] != claims.holds[k]:
            problems.append(f"Condition {k}: the certificate says {'holds' if claims.holds[k] else 'fails'}, "
                            f"condcheck says {own.conditions[k]['verdict']}")
    return problems


def prepare_out(out) -> Path:
    if out is None:
        raise CondcheckError("--out DIR is required: the directory to write the Coq development into")
    d = Path(out)
    if d.exists() and not d.is_dir():
        raise CondcheckError(f"--out {str(d)!r} exists and is not a directory")
    parent = d if d.exists() else d.parent if str(d.parent) else Path(".")
    while not parent.exists():
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise CondcheckError(f"--out {str(d)!r}: {str(parent)!r} is not writable")
    return d


def prove_certificate(certificate: Union[dict, str, os.PathLike], out, *, precheck_first: bool = True,
                      run: bool = True, jobs: Optional[int] = None, quiet: bool = False) -> ProofResult:
    """Write (and with ``run``, check with Coq) the development proving a certificate's statements.

    ``precheck_first=False`` skips the precheck (see the module docstring)."""
    from .development import check_supported
    cert = certificate if isinstance(certificate, dict) else load_certificate(certificate)
    claims = read_claims(cert)
    check_supported(claims)
    d = prepare_out(out)
    if precheck_first:
        problems = precheck(cert, claims)
        if problems:
            raise CondcheckError(f"the certificate of {claims.activation} on {claims.format.name} is false, no proof "
                                 f"written: {'; '.join(problems[:3])}" + (f" (and {len(problems) - 3} more)"
                                                                          if len(problems) > 3 else ""))
    notes = [] if precheck_first else ["written without the precheck: Coq is the only judge of this certificate"]
    return _write_and_run(claims, d, run=run, jobs=jobs, quiet=quiet, notes=notes)


def _write_and_run(claims: Claims, d: Path, *, run: bool, jobs, quiet, notes=()) -> ProofResult:
    from .coqrun import check_development, development_hash
    from .development import write_development
    from .record import save_record
    summary = write_development(claims, d)
    result = ProofResult(str(d), claims.activation, claims.format.name, summary["statement"],
                         {"sigma": summary["facts_sigma"], "dsigma": summary["facts_dsigma"]},
                         development_hash(d),
                         notes=list(notes), verdicts={k: "holds" if h else "fails" for k, h in claims.holds.items()},
                         hypotheses=summary.get("hypotheses", []))
    if run:
        result.coq = check_development(d, jobs=jobs, quiet=quiet).to_dict()
    save_record(result)
    return result


def prove(activation: str, format: str, out, *, run: bool = True, jobs: Optional[int] = None,
          quiet: bool = False) -> ProofResult:
    """Check ``activation`` on ``format`` (condcheck check), then prove its certificate in Coq."""
    from condcheck.formats import get_format
    from .development import check_format, check_supported
    from .recipes import recipe_for
    check_format(get_format(format))
    recipe_for(str(activation))
    d = prepare_out(out)
    from condcheck.check import check_activation
    from .development import is_wide
    # on a wide format the symbolic method's certificate carries the cover of the dead tail
    method = "symbolic" if is_wide(get_format(format)) else "auto"
    claims = read_claims(check_activation(activation, format, method=method).to_certificate())
    check_supported(claims)
    return _write_and_run(claims, d, run=run, jobs=jobs, quiet=quiet)
