"""Progress bars on stderr for long runs: one helper every command uses.

``bar(label, quiet)`` gives a callback ``progress(done, total, what="")`` -- the signature the long
computations (verify's interpreters, the Theorem 5 constructor, the matrix, ``report --all``) already
call -- that draws a tqdm bar on stderr, or ``None`` (nothing drawn, nothing imported) when ``quiet`` is
set or stderr is not a terminal, so piped output and logs stay clean.  ``with working(label, quiet):``
is the same for work that reports no counts (a Theorem 7 construction): the label and the time so far.
"""
from __future__ import annotations

import sys


def enabled(quiet: bool = False) -> bool:
    """Whether a bar is drawn: not with --quiet, and only when stderr is a terminal."""
    return not quiet and sys.stderr.isatty()


class Bar:
    """A tqdm bar on stderr driven by ``(done, total, what)`` calls; closes itself when done == total."""

    def __init__(self, label: str, unit: str = "it"):
        self.label, self.unit, self._bar = label, unit, None

    def __call__(self, done: int, total: int, what: str = "") -> None:
        if self._bar is None:
            from tqdm import tqdm
            self._bar = tqdm(total=total, desc=self.label, unit=self.unit, file=sys.stderr, leave=False,
                             dynamic_ncols=True)
        if total != self._bar.total:
            self._bar.total = total
        if what:
            self._bar.set_postfix_str(what, refresh=False)
        self._bar.update(done - self._bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def bar(label: str, quiet: bool = False, unit: str = "it") -> Bar | None:
    """A progress callback ``(done, total, what="")`` on stderr, or None when no bar is to be drawn."""
    return Bar(label, unit) if enabled(quiet) else None


class Working:
    """A bar without counts for work that reports none: the label and the time so far, kept ticking by a
    background thread until the ``with`` block ends."""

    def __init__(self, label: str):
        import threading

        from tqdm import tqdm
        self._bar = tqdm(total=None, desc=label, unit="", file=sys.stderr, leave=False, dynamic_ncols=True,
                         bar_format="{desc}: {elapsed} elapsed")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def _tick(self):
        while not self._stop.wait(0.5):
            self._bar.refresh()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._bar.close()


class working:
    """``with working(label, quiet): ...``: an elapsed-time bar on stderr while the block runs (nothing
    when quiet or stderr is not a terminal)."""

    def __init__(self, label: str, quiet: bool = False):
        self.label, self.quiet, self._w = label, quiet, None

    def __enter__(self):
        if enabled(self.quiet):
            self._w = Working(self.label)
        return self

    def __exit__(self, *exc):
        if self._w is not None:
            self._w.close()
        return False
