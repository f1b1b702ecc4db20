"""The condition certificate, ``schema: "condcheck.check/2"``: every field, and what it states.

A certificate is a list of statements about one (activation, format, implementation).  Every field is
either a **statement**, which ``condcheck recheck`` re-derives, or **metadata**, which states nothing
about sigma and F and is not read.  Metadata: ``seconds`` and ``enumeration`` (how a chunked run beyond
16 bits enumerated the format) (optional).  Everything else is a statement,
and a field this schema does not name is refused, so that no fact can ride along unchecked.  The
search's free-text log (``evidence``, ``reason`` of the checkers) is not part of the certificate; it is
in the text output of ``condcheck check`` and in the LaTeX report.

Top level (all required unless marked optional):

* ``schema`` = "condcheck.check/2"; ``activation``, ``format``: registry names as the registries spell
  them (``get_activation(name).name``, ``get_format(name).name``); ``implementation``: "exact",
  "float32-upcast", "torch" or a registered plug-in implementation (condcheck.implementations); ``semantics`` = :data:`SEMANTICS` (the only semantics of the checks);
* ``holds``: true, false or null, the conjunction of the three conditions (false if one is false, else
  null if one is null, else true);
* ``conditions``: {"1", "2", "3"} -> a condition record (below);
* ``theorem_branch``, ``M_sigma``, ``H_sigma`` (hexadecimal exact values, or null where the paper states
  none), ``constants_source``, ``depth_bounds``: as the paper states them for the format and
  activation; ``sigma_source`` (present exactly when sigma~ is not certified: a callable plug-in, or the
  observed torch table) says where sigma~ and sigma~' come from.

A condition record has exactly ``verdict`` ("holds", "fails", "undecided", agreeing with ``holds``),
``holds``, ``method``, ``witness``, ``failing_clause`` and ``counterexample``:

* ``method`` "exhaustive" states that the verdict follows from every value of the format: recheck
  enumerates with its own code up to 16 bits; from 17 to 32 bits (chunked runs) it re-derives the
  existential statements point by point, Condition 1's dead tail by its own chunked enumeration when
  asked, and names every other universal statement as not re-derived (:mod:`condcheck.recheck.wide`).  "symbolic" states that it follows from the
  certificate's proof objects (witness points, ``tail_cover``, refutation covers), which recheck
  re-proves as proofs (interval enclosures, monotonicity, certain rounding), on any format.
* holds: ``witness`` (the values and the integers of the condition's witness, every value exact as
  {"hex", "fraction", "bits"}), ``failing_clause`` and ``counterexample`` null.  Condition 1's symbolic
  witness adds ``tail_cover``: intervals of format values that follow each other value by value from
  -Omega to z_d, each dead.
* fails: ``witness`` null; ``failing_clause`` one of :data:`FAILING_CLAUSES` (the clause's id and its
  wording): no candidate satisfies that clause together with the clauses before it.  With method
  "exhaustive" it is also the *first* such clause; with "symbolic" it is the first only where the
  counterexample carries a witness of the clauses before it (Condition 2's ``pair_for_...``).
  ``counterexample``: the fields of :data:`COUNTEREXAMPLE_FIELDS` for that condition, method and
  clause, each a statement (see each condition's module in this package).
* undecided: ``method`` "symbolic" and the other three null (no claim).

Every value is exact: "hex" (:mod:`condcheck.hexfloat`), "fraction" (``n`` or ``n/d`` in lowest terms)
and "bits" (the bit pattern, ``bits`` binary digits) must denote one value of the format.
Covers are text: ``<tag>[<hex>, <hex>] ...`` with tags ``e`` (interval enclosure), ``m`` (monotonicity),
``p`` (one value, both ends equal); the tail cover has no tags.
"""
from __future__ import annotations

import re

SCHEMA = "condcheck.check/2"
SEMANTICS = ("finite-only (Inf or NaN anywhere is an error, docs/semantics.md; the IEEE-through-Inf option "
             "applies to network verification, not to Conditions 1-3)")
METHODS = ("exhaustive", "symbolic")
VERDICTS = {True: "holds", False: "fails", None: "undecided"}
#: formats up to this many bits are decided by enumeration (method "exhaustive")
EXHAUSTIVE_BITS = 16

TOP_FIELDS = ("schema", "activation", "format", "implementation", "semantics", "holds", "conditions",
              "theorem_branch", "M_sigma", "H_sigma", "constants_source", "depth_bounds")
OPTIONAL_TOP_FIELDS = ("sigma_source",)
METADATA_FIELDS = ("seconds", "enumeration")
CONDITION_FIELDS = ("verdict", "holds", "method", "witness", "failing_clause", "counterexample")

BRANCHES = {"main": "main (E >= 6)", "low": "low-exponent appendix (E = 4, 5)", "none": "not covered (E < 4)"}
CONSTANTS_SOURCES = {True: "paper (arXiv 2605.01702)",
                     False: "unknown: the paper's formulas for M_sigma, H_sigma from witnesses are not available"}

#: the failing clauses of each condition: id -> the certificate's text (id, then the clause's wording)
_WORDS = {
    "1": {"(a)": "dead tail: some z_d >= -Omega/2 with sigma~(z) = L = sigma~(-Omega) and sigma~'(z) = 0 for "
                 "every finite z <= z_d",
          "(b)": "live state: some z > z_d with sigma~(z) finite and != L",
          "(c)": "constant state: some b with sigma~(b) a positive power of two",
          "(d)": "zero state: some z with sigma~(z) = 0",
          "(e)": "pass state: some z > z_d with sigma~'(z) = +-2^k"},
    "2": {"(i)": "sigma~(delta_0) != sigma~(delta_1) and |sigma~(delta_0)|, |sigma~(delta_1)|, "
                 "|sigma~(delta_0) - sigma~(delta_1)| <= 2^e_max (sigma~, sigma~' finite at both)",
          "(ii)": "eta_0 >= 1, 2^eta_0 |sigma~'(delta_0)| <= |sigma~'(delta_1)|, sigma~'(delta_1) = +-2^k with "
                  "2^-M <= |sigma~'(delta_1)| <= 1",
          "(iii)": "-k <= eta_1 <= e_max and k <= eta_2 <= -e_min + M",
          "(iv)": "2^(e_min + eta_2) <= max(|sigma~(delta_0)|, |sigma~(delta_1)|) <= 2^(e_max - eta_1)"},
    "3": {"(a)+(b)": "neither route: (a) |sigma~'(0)| >= 2^-M (finite) and some zeta > 0 with sigma~ finite, "
                     "|sigma~| <= 2^e_max at -zeta, 0, zeta; (b) zeta > 0, |x| >= zeta, x even, "
                     "s = RN(zeta + |x|) finite, sigma~(x), sigma~'(x) finite, |sigma~'(x)| >= 2^-M, sigma~ finite "
                     "and |sigma~| <= 2^e_max at -s, 0, s"},
}
FAILING_CLAUSES = {k: {cid: f"{cid} {w}" for cid, w in words.items()} for k, words in _WORDS.items()}
#: clause order (Condition 2: stage s = index + 1)
CLAUSE_ORDER = {k: tuple(words) for k, words in _WORDS.items()}

VALUE = "value"               # an exact value record
VALUE_OR_NULL = "value|null"  # null: the rounded function overflows there
INT = "int"
BOOL = "bool"
INT_OR_NULL = "int|null"
TEXT = "text"
PAIR = "pair"
VALUE_LIST = "value list"
REFUTATION = "refutation"

WITNESS_FIELDS = {
    "1": {"z_dead": VALUE, "L": VALUE, "dead_count": INT, "live": VALUE, "sigma(live)": VALUE,
          "constant": VALUE, "sigma(constant)": VALUE, "zero": VALUE, "pass": VALUE, "dsigma(pass)": VALUE},
    "2": {"delta_0": VALUE, "delta_1": VALUE, "sigma(delta_0)": VALUE, "sigma(delta_1)": VALUE,
          "dsigma(delta_0)": VALUE, "dsigma(delta_1)": VALUE, "eta_0": INT_OR_NULL, "eta_0_unbounded": BOOL,
          "eta_1": INT, "eta_2": INT, "k": INT},
    "3a": {"route": TEXT, "zeta": VALUE, "x": "null", "s": VALUE, "dsigma(0)": VALUE, "sigma(-s)": VALUE,
           "sigma(0)": VALUE, "sigma(s)": VALUE},
    "3b": {"route": TEXT, "zeta": VALUE, "x": VALUE, "s": VALUE, "dsigma(x)": VALUE, "sigma(-s)": VALUE,
           "sigma(0)": VALUE, "sigma(s)": VALUE},
}
PAIR_FIELDS = ("delta_0", "delta_1", "sigma(delta_0)", "sigma(delta_1)", "dsigma(delta_0)", "dsigma(delta_1)")
#: Condition 2: the clauses before each clause, as the pair field names them
BEFORE = {"(ii)": "(i)", "(iii)": "(i)-(ii)", "(iv)": "(i)-(iii)"}
#: what a refutation cover of each (condition, clause) excludes: (function, kind)
REFUTED_KIND = {("1", "(b)"): ("sigma", "finite_not_L"), ("1", "(c)"): ("sigma", "positive_pow2"),
                ("1", "(d)"): ("sigma", "zero"), ("1", "(e)"): ("derivative", "nonzero_pow2"),
                ("2", "(ii)"): ("derivative", "pass_pow2"), ("2", "(iii)"): ("derivative", "pass_pow2_iii"),
                ("3", "(b)"): ("derivative", "abs_at_least_2^-M")}


def counterexample_fields(cond: str, method: str, clause: str, refutation_kind: str | None = None) -> dict:
    """The fields (name -> kind) a counterexample must have, exactly."""
    if cond == "1":
        point = {"z": VALUE, "sigma(z)": VALUE_OR_NULL, "dsigma(z)": VALUE_OR_NULL}
        if clause == "(a)":
            return point
        extra = {"(b)": {"L": VALUE}, "(d)": {"smallest_|sigma|": VALUE} if method == "exhaustive" else {}}
        out = dict(extra.get(clause, {}))
        if method == "symbolic":
            out["refutation"] = REFUTATION
        return out
    if cond == "2":
        if method == "exhaustive":
            if clause == "(i)":
                return {"distinct_sigma_values": VALUE_LIST, "count": INT}
            return {f"pair_for_{BEFORE.get(clause, clause)}": PAIR}
        if refutation_kind == "pairs":
            return {"refutation": REFUTATION, f"pair_for_{BEFORE.get(clause, clause)}": PAIR}
        return {"refutation": REFUTATION}
    out = {"dsigma(0)": VALUE_OR_NULL, "threshold_2^-M": VALUE}
    if method == "exhaustive":
        out.update({"largest_|dsigma|": VALUE_OR_NULL, "x_candidates_route_b": INT})
    else:
        out["refutation"] = REFUTATION
    return out


def refutation_fields(kind: str) -> tuple:
    return ("clause", "kind", "cover") if kind == "pairs" else ("clause", "function", "kind", "cover")


FRACTION_TEXT = re.compile(r"^-?(0|[1-9][0-9]*)(/[1-9][0-9]*)?$")
COVER_ITEM = re.compile(r"([epm])\[([^,\]\s]+), ([^\]\s]+)\]")
TAIL_ITEM = re.compile(r"\[([^,\]\s]+), ([^\]\s]+)\]")
