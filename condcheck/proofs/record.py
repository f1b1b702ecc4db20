"""The record a proof leaves in its development (``proof.json``), and what a report may say from it.

``condcheck prove`` writes ``proof.json`` beside the ``.v`` files: the result (statement, verdicts
proved, Coq's versions and times, the development's SHA-256).  :func:`kernel_note` is what a LaTeX
report prints for a pair with a proof (the sentence and the hash); it is given only when the record says Coq accepted the
development, names the same pair and verdicts, and the files still hash to the recorded value.
"""
from __future__ import annotations

import json
from pathlib import Path

from condcheck.errors import CondcheckError

#: the record's file name inside a development
RECORD = "proof.json"


def save_record(result) -> Path:
    """Write ``result`` (a ProofResult) as the record of its development."""
    path = Path(result.directory) / RECORD
    path.write_text(json.dumps(result.to_dict(), indent=1) + "\n")
    return path


def load_record(directory) -> dict:
    path = Path(directory) / RECORD
    try:
        rec = json.loads(path.read_text())
    except OSError:
        raise CondcheckError(f"--proof {str(directory)!r}: no {RECORD}; is it a directory written by "
                             f"condcheck prove?") from None
    except ValueError:
        raise CondcheckError(f"--proof {str(directory)!r}: {RECORD} is not JSON") from None
    if not isinstance(rec, dict) or rec.get("schema") != "condcheck.prove/1":
        raise CondcheckError(f"--proof {str(directory)!r}: {RECORD} is not a condcheck.prove/1 record")
    return rec


def kernel_note(directory, activation: str, format: str, verdicts: dict) -> tuple[str, str]:
    """("kernel-checked by Coq V, Flocq W", with "under the hypotheses ..." when the theorem has premises,
    and the development's SHA-256) for the development in ``directory``, or a one-line error saying why
    it does not prove this pair's verdicts."""
    from .coqrun import development_hash
    rec = load_record(directory)
    where = f"--proof {str(directory)!r}"
    if (rec.get("activation"), rec.get("format")) != (activation, format):
        raise CondcheckError(f"{where} proves {rec.get('activation')} on {rec.get('format')}, not {activation} on "
                             f"{format}")
    if rec.get("verdicts") != verdicts:
        raise CondcheckError(f"{where} proves the verdicts {rec.get('verdicts')}, not this check's {verdicts}")
    coq = rec.get("coq") or {}
    if not coq.get("ok"):
        raise CondcheckError(f"{where}: Coq did not accept this development (or was not run)")
    digest = development_hash(directory)
    if digest != rec.get("development_sha256"):
        raise CondcheckError(f"{where}: the .v files changed since Coq checked them (sha256 {digest[:16]}..., "
                             f"recorded {str(rec.get('development_sha256'))[:16]}...)")
    v = coq.get("versions", {})
    hyps = [h.get("name", "?") for h in rec.get("hypotheses") or []]
    under = f" under the hypotheses {', '.join(hyps)} (listed in {RECORD})" if hyps else ""
    return f"kernel-checked by Coq {v.get('coq', '?')}, Flocq {v.get('flocq', '?')}{under}", digest
