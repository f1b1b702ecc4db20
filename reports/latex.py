"""LaTeX text helpers for the reports: escaping, exact numbers in typewriter type, macro names.

Numbers go into reports as the same strings the JSON certificate holds (hex, fraction, bit pattern),
so a reader -- or a test running pdftotext -- can compare them character by character.  Macro names
are derived from (activation, format, quantity) by one deterministic mangler, so a paper that
``\\input``s the macros file keeps working when the numbers are regenerated.
"""
from __future__ import annotations

import re
from importlib import resources

from condcheck.errors import CondcheckError

_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
            "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "'": r"\textquotesingle{}",
            "`": r"\textasciigrave{}"}
# "'" and "`" would otherwise print as curly quotes, and "--" as a dash: not what pdftotext must read.
_ESCAPE_RE = re.compile("|".join(re.escape(k) for k in _ESCAPES))
_DASHES = re.compile(r"-(?=-)")

#: Typewriter strings longer than this get break points, so a float64 fraction or bit pattern
#: wraps inside its column instead of running off the page.
BREAK_AFTER = 32


def escape(text) -> str:
    """Plain text safe for LaTeX that prints as the same characters (T1 encoding, no ligatures)."""
    return _DASHES.sub("-{}", _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group()], str(text)))


def tt(text, breakable: bool = True) -> str:
    r"""``\texttt`` of an exact string; long strings get ``\allowbreak`` every 16 characters."""
    s = str(text)
    if breakable and len(s) > BREAK_AFTER:
        parts = [escape(s[i:i + 16]) for i in range(0, len(s), 16)]
        return r"\texttt{" + r"\allowbreak{}".join(parts) + "}"
    return r"\texttt{" + escape(s) + "}"


_SMALL = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def number_word(n: int) -> str:
    """An integer as lowercase English letters (macro names may not contain digits)."""
    if n < 0:
        return "minus" + number_word(-n)
    if n < 20:
        return _SMALL[n]
    if n < 100:
        return _TENS[n // 10 - 2] + ("" if n % 10 == 0 else _SMALL[n % 10])
    if n < 1000:
        return _SMALL[n // 100] + "hundred" + ("" if n % 100 == 0 else number_word(n % 100))
    for size, word in ((10 ** 9, "billion"), (10 ** 6, "million"), (1000, "thousand")):
        if n >= size:
            return number_word(n // size) + word + ("" if n % size == 0 else number_word(n % size))
    raise AssertionError(n)


_SYMBOLS = {"-": "Minus", "+": "Plus", "'": "Prime"}


def mangle(part) -> str:
    """One name part as letters only: letter runs capitalized, digit runs as number words, ``-``, ``+``
    and ``'`` as words, every other character a separator (``float8_e4m3`` -> ``FloateightEfourMthree``,
    ``sigma(-s)`` -> ``SigmaMinusS``)."""
    out = []
    for m in re.finditer(r"[A-Za-z]+|[0-9]+|[-+']", str(part)):
        t = m.group()
        if t.isdigit():
            out.append(number_word(int(t)))
        elif t in _SYMBOLS:
            out.append(_SYMBOLS[t])
        else:
            out.append(t[0].upper() + t[1:])
    return "".join(out)


def macro_name(*parts, prefix: str = "CC") -> str:
    r"""A LaTeX control word (letters only) for a reported number, e.g.
    ``macro_name("gelu", "float8_e4m3", "M_sigma")`` -> ``CCgeluFloateightEfourMthreeMSigma``.
    The first part keeps its case after the prefix so activation names read as written."""
    first, rest = mangle(parts[0]), "".join(mangle(p) for p in parts[1:])
    name = prefix + first[:1].lower() + first[1:] + rest
    if not re.fullmatch(r"[A-Za-z]+", name):
        raise AssertionError(f"internal: macro name {name!r} is not letters only")
    return name


class Macros:
    """An ordered set of ``\\newcommand`` definitions that refuses a name twice (two numbers must
    never share a macro, or a paper would silently print the wrong one)."""

    def __init__(self):
        self.items: dict[str, str] = {}

    def add(self, name: str, latex_value: str) -> None:
        if name in self.items:
            raise CondcheckError(f"internal: macro \\{name} defined twice")
        self.items[name] = latex_value

    def update(self, other: "Macros") -> None:
        for k, v in other.items.items():
            self.add(k, v)

    def text(self, header: str = "") -> str:
        lines = [f"% {line}" for line in header.splitlines()]
        lines += [f"\\newcommand{{\\{k}}}{{{v}}}" for k, v in self.items.items()]
        return "\n".join(lines) + "\n"


# ---- templates --------------------------------------------------------------------------------------
#: The templates are package data of ``reports`` (``reports/templates/*.tex``), read through
#: importlib.resources so they are found wherever the package is installed (a wheel, a zip).
TEMPLATES = "templates"
_FIELD = re.compile(r"<<([a-z_]+)>>")


def template_text(template: str) -> str:
    """The text of one template of ``reports/templates``, read as package data."""
    try:
        return resources.files(__package__).joinpath(TEMPLATES).joinpath(template).read_text(encoding="utf-8")
    except OSError as e:
        raise CondcheckError(f"report template {TEMPLATES}/{template} is missing from the installed reports "
                             f"package ({e.strerror or e}); reinstall condcheck") from None


def render(template: str, **fields) -> str:
    """Fill ``<<name>>`` fields of a template in reports/templates; every field must be given and used
    (a typo would otherwise leave a placeholder in a paper)."""
    text = template_text(template)
    wanted = set(_FIELD.findall(text))
    if wanted != set(fields):
        raise AssertionError(f"internal: template {template} fields {sorted(wanted)} != given {sorted(fields)}")
    return _FIELD.sub(lambda m: str(fields[m.group(1)]), text)
