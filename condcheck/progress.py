"""Progress on stderr for long runs: one helper every command uses.

``bar(label, quiet)`` gives a callback ``progress(done, total, what="")`` -- the signature the long
computations (verify's interpreters, the Theorem 5 constructor, the matrix, ``report --all``) already
call -- or ``None`` (nothing drawn, nothing imported).  What it draws is the *style*
(``condcheck --progress``):

* ``auto`` (the default): a tqdm bar when stderr is a terminal, nothing otherwise, so piped output
  stays clean;
* ``bar``: the tqdm bar whatever stderr is;
* ``lines``: a plain line now and then (every :data:`LINE_EVERY` seconds and at the end), with the
  count, the time so far and an estimate of the time left, for unattended runs whose stderr is a log
  (a box on a cluster for hours);
* ``off``: nothing.

``--quiet`` turns it off in every style.  ``with working(label, quiet):`` is the same for work that
reports no counts (a Theorem 7 construction): the label and the time so far.
"""
from __future__ import annotations

import sys
import time

#: the styles of ``condcheck --progress``
STYLES = ("auto", "bar", "lines", "off")
#: seconds between two lines of the ``lines`` style
LINE_EVERY = 60.0

_style = "auto"


def set_style(style: str) -> None:
    """Choose what progress looks like in this process (``condcheck --progress STYLE``)."""
    global _style
    if style not in STYLES:
        raise ValueError(f"progress style: {style!r} is not one of {', '.join(STYLES)}")
    _style = style


def style(quiet: bool = False) -> str:
    """What is drawn now: "bar", "lines" or "off" (``auto`` resolved by whether stderr is a terminal)."""
    if quiet:
        return "off"
    if _style == "auto":
        return "bar" if sys.stderr.isatty() else "off"
    return _style


def clock(seconds: float) -> str:
    """Seconds as H:MM:SS (or M:SS under an hour)."""
    s = int(round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


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


class Lines:
    """Plain progress lines on stderr driven by ``(done, total, what)`` calls: one at the first call, then
    at most one every ``every`` seconds, and one when done == total.  Each says the count, the time so
    far (from the Lines' making, or from the first call after a run ended) and, once something is done,
    the time left at the average pace so far."""

    def __init__(self, label: str, unit: str = "it", every: float | None = None):
        self.label, self.unit = label, unit
        self.every = LINE_EVERY if every is None else every
        self._start, self._last = time.monotonic(), None

    def __call__(self, done: int, total: int, what: str = "") -> None:
        now = time.monotonic()
        if self._start is None:                      # a new run after one ended
            self._start, self._last = now, None
        finished = total and done >= total
        if not finished and self._last is not None and now - self._last < self.every:
            return
        self._last = now
        elapsed = now - self._start
        text = f"{self.label}: {done}/{total} {self.unit}"
        if total:
            text += f" ({100 * done / total:.0f} %)"
        text += f", {clock(elapsed)} elapsed"
        if finished:
            self._start = None
        elif 0 < done < total:
            text += f", about {clock(elapsed * (total - done) / done)} left"
        if what:
            text += f" ({what})"
        print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        self._start = None


def bar(label: str, quiet: bool = False, unit: str = "it") -> Bar | Lines | None:
    """A progress callback ``(done, total, what="")`` on stderr in the current style, or None."""
    kind = style(quiet)
    if kind == "bar":
        return Bar(label, unit)
    return Lines(label, unit) if kind == "lines" else None


class Counter:
    """``with Counter(total, show): ... counter.update(k)``: counts items and passes the running count to
    a ``bar()`` callback (nothing when it is None), closing it when the block ends."""

    def __init__(self, total: int, show):
        self.total, self.show, self.n = total, show, 0

    def update(self, k: int = 1) -> None:
        self.n += k
        if self.show is not None:
            self.show(self.n, self.total)

    def __enter__(self):
        if self.show is not None:
            self.show(0, self.total)
        return self

    def __exit__(self, *exc):
        if self.show is not None:
            self.show.close()
        return False


class Working:
    """Progress without counts for work that reports none: the label and the time so far, as a bar
    kept ticking (style "bar") or as a line at the start, every ``LINE_EVERY`` seconds and at the end
    (style "lines"), by a background thread until :meth:`close`."""

    def __init__(self, label: str, kind: str = "bar"):
        import threading
        self.label, self.kind, self._start = label, kind, time.monotonic()
        if kind == "bar":
            from tqdm import tqdm
            self._bar = tqdm(total=None, desc=label, unit="", file=sys.stderr, leave=False, dynamic_ncols=True,
                             bar_format="{desc}: {elapsed} elapsed")
        else:
            print(f"{label}: started", file=sys.stderr, flush=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def _elapsed(self) -> str:
        return clock(time.monotonic() - self._start)

    def _tick(self):
        while not self._stop.wait(0.5 if self.kind == "bar" else LINE_EVERY):
            if self.kind == "bar":
                self._bar.refresh()
            else:
                print(f"{self.label}: {self._elapsed()} elapsed", file=sys.stderr, flush=True)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.kind == "bar":
            self._bar.close()
        else:
            print(f"{self.label}: ended after {self._elapsed()}", file=sys.stderr, flush=True)


class working:
    """``with working(label, quiet): ...``: the time so far on stderr while the block runs, in the
    current style (nothing when quiet, or in the default style when stderr is not a terminal)."""

    def __init__(self, label: str, quiet: bool = False):
        self.label, self.quiet, self._w = label, quiet, None

    def __enter__(self):
        kind = style(self.quiet)
        if kind != "off":
            self._w = Working(self.label, kind)
        return self

    def __exit__(self, *exc):
        if self._w is not None:
            self._w.close()
        return False
