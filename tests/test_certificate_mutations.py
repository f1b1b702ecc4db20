"""Mutation suite for ``condcheck recheck``: every false mutant of a certificate is rejected.

Certificates across the verdict matrix (exhaustive and symbolic; holds and fails; formats of 4 to 32
bits; a symbolic fails with refutation covers, one with a pair cover, a wide format with a tail cover)
are mutated field by field (tests/certificate_mutants.py).  The independent judge
(tests/certificate_oracle.py) decides which mutants still state only true facts.  Every false mutant must
be rejected by recheck; a true one may pass (a still-valid witness, a weaker claim) or be rejected (a
proof object changed so that it no longer proves).  The score is printed (``-s``) and returned by
``python3 -m tests.mutation_score``.  Default suite: the 4- to 8-bit certificates and two float32 ones;
``-m slow``: the whole matrix, float16 included.
"""
from __future__ import annotations

import json

import pytest

from certificate_mutants import mutants
from certificate_oracle import judge
from condcheck.check import check_activation
from condcheck.errors import CondcheckError
from condcheck.recheck import recheck_certificate

#: (activation, format, method): the default suite
DEFAULT = [("sigmoid", "float4_e2m1fn", "auto"), ("sigmoid", "float4_e2m1fn", "symbolic"),
           ("gelu", "float4_e2m1fn", "auto"), ("sin", "float4_e2m1fn", "symbolic"),
           ("swish", "float6_e2m3fn", "auto"), ("leaky_relu", "float6_e2m3fn", "symbolic"),
           ("gelu", "float8_e4m3", "auto"), ("relu", "float8_e4m3", "symbolic"),
           ("gelu", "b3_2", "symbolic"), ("gelu", "b3_2", "auto"),
           ("gelu", "float32", "auto"), ("leaky_relu", "float32", "auto")]
#: the rest of the matrix (-m slow)
SLOW = [(a, f, m) for f in ("float4_e2m1fn", "float6_e2m3fn", "float8_e4m3", "float16")
        for a in ("gelu", "sigmoid", "relu", "swish", "leaky_relu", "sin") for m in ("auto", "symbolic")
        if (a, f, m) not in DEFAULT] + [(a, "float32", "auto") for a in ("sigmoid", "relu", "swish", "sin")]


def certificate(act, fmt, method):
    return json.loads(json.dumps(check_activation(act, fmt, method=method).to_certificate()))


def accepted(c) -> bool:
    try:
        return recheck_certificate(c)["ok"]
    except CondcheckError:
        return False


def run(case):
    """{"false": n, "false_rejected": n, "true": n, "true_accepted": n, "escapes": [...]} for one certificate."""
    genuine = certificate(*case)
    ok, why = judge(genuine, genuine)
    assert ok, f"the judge rejects the genuine certificate of {case}: {why}"
    assert accepted(genuine), f"recheck rejects the genuine certificate of {case}"
    out = {"false": 0, "false_rejected": 0, "true": 0, "true_accepted": 0, "escapes": []}
    for what, m in mutants(genuine):
        true, _ = judge(m, genuine)
        acc = accepted(m)
        if true:
            out["true"] += 1
            out["true_accepted"] += acc
        else:
            out["false"] += 1
            out["false_rejected"] += not acc
            if acc:
                out["escapes"].append(f"{case}: {what}")
    return out


def score_text(results) -> str:
    f = sum(r["false"] for r in results)
    fr = sum(r["false_rejected"] for r in results)
    t = sum(r["true"] for r in results)
    ta = sum(r["true_accepted"] for r in results)
    return (f"mutation score over {len(results)} certificates: false mutants rejected {fr}/{f}; "
            f"true mutants accepted {ta}/{t}")


_RESULTS = []


@pytest.mark.parametrize("case", DEFAULT, ids=lambda c: "-".join(c))
def test_every_false_mutant_is_rejected(case):
    r = run(case)
    _RESULTS.append(r)
    print(f"\n{case}: {score_text([r])}")
    assert not r["escapes"], r["escapes"][:10]
    assert r["false"] > 50


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW, ids=lambda c: "-".join(c))
def test_every_false_mutant_is_rejected_across_the_matrix(case):
    r = run(case)
    print(f"\n{case}: {score_text([r])}")
    assert not r["escapes"], r["escapes"][:10]


def test_weaker_true_mutants_are_accepted():
    # a condition made undecided (the overall verdict adjusted) states less, and every bit of it is true
    from certificate_mutants import weaker
    genuine = certificate("gelu", "float8_e4m3", "auto")
    for what, m in weaker(genuine):
        assert judge(m, genuine)[0] and accepted(m), what


def test_the_judge_and_the_schema_word_the_failing_clauses_alike():
    from certificate_oracle import CLAUSE_TEXT
    from condcheck.recheck.schema import FAILING_CLAUSES
    assert FAILING_CLAUSES == CLAUSE_TEXT
