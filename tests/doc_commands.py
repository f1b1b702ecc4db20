"""The docs' commands, run for real: README.md and docs/*.md show what condcheck prints, and this checks it.

The convention (also in docs/architecture.md, "Docs that run"):

* A fenced block marked ``console`` is a shell session.  A line starting with ``$ `` is a command; the
  lines after it, up to the next command or the end of the block, are its expected output (stdout and
  stderr together).  A command may end with a comment ``# exit N``: its expected exit status (default 0).
* The commands of one page run in order, by bash, in one temporary directory that holds a copy of
  ``examples/``, so a command can read the files an earlier one wrote.  ``condcheck`` and ``python3``
  there run this checkout's code (``python3 -P -m condcheck`` with PYTHONPATH at the repository, as an
  installed ``condcheck`` script would: the current directory is not on the import path).
* Comparing: trailing spaces and trailing empty lines are dropped, and two kinds of volatile numbers are
  replaced on both sides before the comparison: a number of seconds (``1.3 s``) and a memory size
  (``796 MiB``, ``1.2 GiB``).  An expected line ``...`` stands for any number of lines.
* An HTML comment on the line before a block sets how it runs: ``<!-- doc-test: slow -->`` (only with
  ``-m slow``; later fast blocks of the page must not need its files), ``<!-- doc-test: torch -->``
  (skipped without torch), ``<!-- doc-test: skip -->`` (never run); marks combine (``slow torch``),
  and a reason may follow in parentheses: ``<!-- doc-test: skip (needs a GPU) -->``.
* A ``python`` block after ``<!-- doc-test: file examples/NAME.py -->`` must be that file, as it is.

Blocks marked ``sh`` (installing, the whole test suite) are shown, not run.

    python3 -m tests.doc_commands [PAGE ...] [--slow] [--update]

runs the pages' commands (default: every page), prints each mismatch, and with ``--update`` rewrites the
expected output (and ``# exit N``) of every mismatching command from its real run, and every example
file block from its file.  An expected output with ``...`` is rewritten in full: elide it again by hand.
After a merge that changes what condcheck prints, run it with ``--update --slow`` and read the diff.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
EXAMPLES = REPO / "examples"

_FENCE = re.compile(r"^(```+)\s*([\w+-]*)\s*$")
_MARK = re.compile(r"^<!--\s*doc-test:\s*(\w+)(?:\s+(.*?))?\s*-->\s*$")
_EXIT = re.compile(r"\s#\s*exit\s+(\d+)\b.*$")
_SECONDS = re.compile(r" *(?<![\w.])\d[\d,]*(?:\.\d+)?( CPU)? s\b")
_MEMORY = re.compile(r" *(?<![\w.])\d[\d,]*(?:\.\d+)? (MiB|GiB)\b")
ELLIPSIS = "..."
MARKS = ("slow", "torch", "skip")
COMMAND_TIMEOUT = 1800


def _rel(page: Path):
    """A page's path relative to the repository (as given, for a page outside it)."""
    try:
        return page.relative_to(REPO)
    except ValueError:
        return page


def pages() -> list[Path]:
    """README.md and every page under docs/, in a fixed order."""
    return [REPO / "README.md"] + sorted(DOCS.rglob("*.md"))


@dataclass
class Command:
    line: int                    # 0-based index of the "$ " line in the page
    text: str                    # the shell command, without "$ " and without "# exit N"
    exit: int                    # expected exit status
    expected: list[str]          # expected output lines
    end: int                     # index one past the last expected line


@dataclass
class Block:
    kind: str                    # "console" or "file"
    mode: str                    # the marks of a console block ("slow", "torch", "skip"; "" for none); the file path (file)
    start: int                   # index of the first line inside the fence
    end: int                     # index of the closing fence
    commands: list[Command] = field(default_factory=list)


def parse(text: str) -> list[Block]:
    """The console blocks and the example-file blocks of a page."""
    lines = text.split("\n")
    blocks, i, mark = [], 0, None
    while i < len(lines):
        m = _MARK.match(lines[i])
        if m:
            mark = (m.group(1), m.group(2) or "")
            i += 1
            continue
        f = _FENCE.match(lines[i])
        if not f:
            if lines[i].strip():
                mark = None
            i += 1
            continue
        fence, lang = f.group(1), f.group(2)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != fence:
            j += 1
        if lang == "console":
            words = f"{mark[0]} {mark[1].split('(')[0]}".split() if mark else []   # "(...)": a reason
            mode = " ".join(w for w in words if w in MARKS)
            blocks.append(Block("console", mode, i + 1, j, _commands(lines, i + 1, j)))
        elif lang == "python" and mark and mark[0] == "file":
            blocks.append(Block("file", mark[1].split()[0], i + 1, j))
        mark = None
        i = j + 1
    return blocks


def _commands(lines, start, end) -> list[Command]:
    cmds = []
    for k in range(start, end):
        if lines[k].startswith("$ "):
            if cmds:
                cmds[-1].end = k
            raw = lines[k][2:]
            m = _EXIT.search(raw)
            status = int(m.group(1)) if m else 0
            cmds.append(Command(k, raw, status, [], end))
        elif cmds:
            cmds[-1].expected.append(lines[k])
        elif lines[k].strip():
            raise ValueError(f"line {k + 1}: output before the first '$ ' command of a console block")
    return cmds


def normalize(line: str) -> str:
    """A line with its volatile numbers replaced: seconds (``1.3 s``, ``0.09 CPU s``) and memory sizes
    (``796 MiB``), with the spaces that pad them, and trailing spaces."""
    line = _SECONDS.sub(r" <seconds>\1 s", line.rstrip())
    return _MEMORY.sub(r" <size> \1", line)


def _trim(lines: list[str]) -> list[str]:
    lines = [normalize(s) for s in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether the actual output lines match the expected ones (normalized; "..." = any lines)."""
    exp, act = _trim(expected), _trim(actual)
    memo = {}

    def go(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(exp):
            r = j == len(act)
        elif exp[i].strip() == ELLIPSIS:
            r = any(go(i + 1, k) for k in range(j, len(act) + 1))
        else:
            r = j < len(act) and exp[i] == act[j] and go(i + 1, j + 1)
        memo[(i, j)] = r
        return r
    return go(0, 0)


def _executable(path: Path, body: str) -> None:
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def environment(bin_dir: Path) -> dict:
    """An environment where ``condcheck`` and ``python3`` run this checkout's code."""
    py = shlex.quote(sys.executable)
    # the checkout first on the import path even where a command sets PYTHONPATH itself (PYTHONPATH=examples)
    path = f'PYTHONPATH={shlex.quote(str(REPO))}"${{PYTHONPATH:+{os.pathsep}$PYTHONPATH}}"'
    _executable(bin_dir / "condcheck", f'#!/bin/sh\n{path} exec {py} -P -m condcheck "$@"\n')
    _executable(bin_dir / "python3", f'#!/bin/sh\n{path} exec {py} "$@"\n')
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["MPLBACKEND"] = "Agg"
    env["COLUMNS"] = "120"
    if env.pop("PYTEST_XDIST_WORKER", None):
        env["NUMBA_NUM_THREADS"] = "1"      # (a worker per core already: tests/conftest.py)
    return env


@dataclass
class Outcome:
    page: Path
    command: Command
    status: int
    output: list[str]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == self.command.exit and matches(self.command.expected, self.output)

    def report(self) -> str:
        rel = _rel(self.page)
        exp = "\n".join(self.command.expected).rstrip()
        got = "\n".join(self.output).rstrip()
        return (f"{rel}:{self.command.line + 1}: $ {self.command.text}\n"
                f"exit status {self.status}, expected {self.command.exit}\n"
                f"--- expected\n{exp}\n--- actual\n{got}\n")


def run_page(page: Path, workdir: Path, slow: bool = False, torch: bool | None = None) -> tuple[list, list]:
    """Run a page's console blocks in workdir; returns (outcomes, file-block problems)."""
    if torch is None:
        torch = _have_torch()
    text = page.read_text()
    blocks = parse(text)
    problems = []
    for b in blocks:
        if b.kind == "file":
            shown = "\n".join(text.split("\n")[b.start:b.end]) + "\n"
            if not (REPO / b.mode).exists():
                problems.append(f"{_rel(page)}:{b.start}: shows {b.mode}, which does not exist")
            elif shown != (REPO / b.mode).read_text():
                problems.append(f"{_rel(page)}:{b.start}: the block differs from {b.mode}")
    todo = [b for b in blocks if b.kind == "console" and runs(b, slow, torch)]
    if not todo:
        return [], problems
    workdir = Path(workdir)
    shutil.copytree(EXAMPLES, workdir / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    bin_dir = workdir / ".doc-test-bin"
    bin_dir.mkdir()
    env = environment(bin_dir)
    outcomes = []
    for b in todo:
        for c in b.commands:
            t0 = time.perf_counter()
            p = subprocess.run(["bash", "-c", c.text], cwd=workdir, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=COMMAND_TIMEOUT)
            outcomes.append(Outcome(page, c, p.returncode, p.stdout.split("\n"), time.perf_counter() - t0))
    return outcomes, problems


def runs(block: Block, slow: bool, torch: bool) -> bool:
    """Whether a console block runs with these options (its marks: slow, torch, skip)."""
    marks = block.mode.split()
    return "skip" not in marks and (slow or "slow" not in marks) and (torch or "torch" not in marks)


def _have_torch() -> bool:
    import importlib.util
    return importlib.util.find_spec("torch") is not None


def update_page(page: Path, outcomes: list[Outcome]) -> int:
    """Rewrite the mismatching commands' expected output and the example-file blocks; returns the count."""
    lines = page.read_text().split("\n")
    edits = []
    for o in outcomes:
        if o.ok:
            continue
        c = o.command
        out = [s.rstrip() for s in o.output]
        while out and not out[-1]:
            out.pop()
        cmd = _EXIT.sub("", c.text).rstrip()
        if o.status:
            cmd += f"  # exit {o.status}"
        edits.append((c.line, c.end, ["$ " + cmd] + out))
    for b in parse("\n".join(lines)):
        if b.kind == "file" and (REPO / b.mode).exists():
            body = (REPO / b.mode).read_text().rstrip("\n").split("\n")
            if lines[b.start:b.end] != body:
                edits.append((b.start, b.end, body))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = new
    if edits:
        page.write_text("\n".join(lines))
    return len(edits)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Run the commands shown in README.md and docs/ and compare.")
    ap.add_argument("pages", nargs="*", type=Path, help="pages to run (default: README.md and docs/*.md)")
    ap.add_argument("--slow", action="store_true", help="also run the blocks marked <!-- doc-test: slow -->")
    ap.add_argument("--update", action="store_true", help="rewrite expected outputs from the real runs")
    ap.add_argument("--times", action="store_true", help="print each command's wall time")
    args = ap.parse_args(argv)
    bad = 0
    for page in [p.resolve() for p in args.pages] or pages():
        with tempfile.TemporaryDirectory(prefix="doc-test-") as tmp:
            outcomes, problems = run_page(page, Path(tmp), slow=args.slow)
        failed = [o for o in outcomes if not o.ok]
        if args.times:
            for o in outcomes:
                print(f"{o.seconds:6.1f} s  {_rel(page)}:{o.command.line + 1}: $ {o.command.text[:90]}")
        for o in failed:
            print(o.report())
        for p in problems:
            print(p)
        print(f"{_rel(page)}: {len(outcomes)} commands, {len(failed)} differ"
              + (f", {len(problems)} example blocks differ" if problems else ""))
        if args.update and (failed or problems):
            print(f"  rewrote {update_page(page, outcomes)} places")
        bad += len(failed) + len(problems)
    return 1 if bad and not args.update else 0


if __name__ == "__main__":
    sys.exit(main())
