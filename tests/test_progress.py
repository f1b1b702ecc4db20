"""Progress bars (condcheck.progress): drawn on a terminal's stderr, never with --quiet or into a pipe."""
from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from condcheck import progress

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _run(args, stderr_on_terminal: bool, cwd):
    """Run ``condcheck ARGS``; its stderr a pseudo-terminal or a pipe. Returns (exit status, stderr text)."""
    cmd = [sys.executable, "-m", "condcheck", *args]
    if not stderr_on_terminal:
        p = subprocess.run(cmd, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
        return p.returncode, p.stderr.decode()
    main, sub = pty.openpty()
    fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))     # a terminal of 24 x 100
    try:
        p = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=sub)
        os.close(sub)
        chunks = []
        while True:
            try:
                data = os.read(main, 4096)
            except OSError:                 # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        return p.wait(timeout=600), b"".join(chunks).decode(errors="replace")
    finally:
        os.close(main)


@pytest.fixture(scope="module")
def network_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("progress")
    status, err = _run(["construct", "theorem5", "relu", "float8_e4m3", "--domain", "sample:3:1", "--targets",
                        "random:1", "--out", "net.json"], False, folder)
    assert status == 0, err
    return folder / "net.json"


def test_verify_draws_a_bar_when_stderr_is_a_terminal(network_file):
    status, err = _run(["verify", str(network_file)], True, network_file.parent)
    assert status == 0 and "verifying" in err and "point" in err


def test_verify_draws_no_bar_with_quiet(network_file):
    status, err = _run(["verify", str(network_file), "--quiet"], True, network_file.parent)
    assert status == 0 and err == ""


def test_verify_draws_no_bar_when_stderr_is_a_pipe(network_file):
    status, err = _run(["verify", str(network_file)], False, network_file.parent)
    assert status == 0 and err == ""


def test_a_theorem7_construction_shows_its_elapsed_time_on_a_terminal(tmp_path):
    args = ["construct", "theorem7", "relu", "float6_e3m2fn", "--domain", "sample:2:1", "--targets", "random:1",
            "--out", "net7.json"]
    status, err = _run(args, True, tmp_path)
    assert status == 0 and "constructing and verifying" in err and "elapsed" in err


def test_no_bar_is_made_when_quiet_or_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress.bar("work") is None
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert progress.bar("work", quiet=True) is None
    assert isinstance(progress.bar("work"), progress.Bar)


def test_a_bar_follows_the_counts_it_is_given_and_closes_at_the_end(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    show = progress.Bar("steps")
    show(1, 4, "first")
    assert show._bar.n == 1 and "steps" in out.getvalue() and show._bar.postfix == "first"
    show(3, 4)
    assert show._bar.n == 3
    show(4, 4)
    assert show._bar is None


@pytest.fixture
def style(monkeypatch):
    """Set the progress style for one test (restored afterwards); stderr a StringIO that is no terminal
    (set in the test's body: pytest puts its own stderr back between a fixture's setup and the test)."""
    out = io.StringIO()

    def use(name):
        monkeypatch.setattr(sys, "stderr", out)
        monkeypatch.setattr(progress, "_style", "auto")
        progress.set_style(name)
        return out
    return use


def test_the_lines_style_draws_lines_even_when_stderr_is_not_a_terminal(style):
    style("lines")
    assert isinstance(progress.bar("work"), progress.Lines)


def test_the_bar_style_draws_a_bar_even_when_stderr_is_not_a_terminal(style):
    style("bar")
    assert isinstance(progress.bar("work"), progress.Bar)


def test_quiet_turns_progress_off_in_every_style(style):
    for name in progress.STYLES:
        style(name)
        assert progress.bar("work", quiet=True) is None


def test_the_off_style_draws_nothing_even_on_a_terminal(style, monkeypatch):
    style("off")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert progress.bar("work") is None


def test_an_unknown_style_is_refused_with_the_allowed_ones():
    with pytest.raises(ValueError, match="'sometimes' is not one of auto, bar, lines, off"):
        progress.set_style("sometimes")


def test_a_line_says_the_count_the_time_so_far_and_the_time_left(style, monkeypatch):
    out = style("lines")
    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    show = progress.Lines("chunks", "chunk", every=60)
    show(0, 10)
    now[0] += 120
    show(4, 10, "depth 13")
    assert out.getvalue().splitlines() == ["chunks: 0/10 chunk (0 %), 0:00 elapsed",
                                           "chunks: 4/10 chunk (40 %), 2:00 elapsed, about 3:00 left (depth 13)"]


def test_lines_come_at_most_once_per_interval_and_always_at_the_end(style, monkeypatch):
    out = style("lines")
    now = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    show = progress.Lines("work", every=60)
    for done in range(1, 11):                     # ten steps of 25 s: lines at 25, 100, 175 s and the end
        now[0] += 25
        show(done, 10)
    lines = out.getvalue().splitlines()
    assert [line.split(":")[1].split()[0] for line in lines] == ["1/10", "4/10", "7/10", "10/10"]
    assert lines[-1] == "work: 10/10 it (100 %), 4:10 elapsed"


def test_the_time_so_far_counts_from_the_making_of_the_lines_not_the_first_call(style, monkeypatch):
    out = style("lines")
    now = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    show = progress.Lines("chunks", "chunk")
    now[0] += 90                                  # the first chunk took 90 s
    show(1, 4)
    assert out.getvalue() == "chunks: 1/4 chunk (25 %), 1:30 elapsed, about 4:30 left\n"


def test_the_time_is_written_in_hours_minutes_and_seconds():
    assert [progress.clock(s) for s in (0, 59.6, 61, 3600, 3 * 3600 + 62)] == ["0:00", "1:00", "1:01", "1:00:00",
                                                                              "3:01:02"]


def test_work_without_counts_says_when_it_started_and_ended_in_the_lines_style(style):
    out = style("lines")
    with progress.working("building"):
        pass
    lines = out.getvalue().splitlines()
    assert lines[0] == "building: started" and lines[-1].startswith("building: ended after 0:0")


def test_a_counter_passes_the_running_count_and_starts_at_zero(style):
    out = style("lines")
    with progress.Counter(3, progress.Lines("items", every=0)) as counter:
        counter.update(2)
        counter.update(1)
    assert [line.split()[1] for line in out.getvalue().splitlines()] == ["0/3", "2/3", "3/3"]


def test_the_engine_follows_the_lines_style_without_a_terminal(style):
    from condcheck.distributed import SerialRunner
    out = style("lines")
    assert SerialRunner(progress=None).map(abs, [-1, 2], label="chunks") == [1, 2]
    assert out.getvalue().splitlines()[-1].startswith("chunks: 2/2 task (100 %)")


def test_verify_writes_progress_lines_into_a_pipe_when_asked(network_file):
    status, err = _run(["--progress", "lines", "verify", str(network_file)], False, network_file.parent)
    last = err.splitlines()[-1]
    assert status == 0 and last.startswith("verifying: 3/3 point (100 %), ") and "\r" not in err


def test_an_unknown_progress_style_is_one_line_of_error(tmp_path):
    status, err = _run(["--progress", "sometimes", "formats"], False, tmp_path)
    assert status == 2 and len(err.strip().splitlines()) == 1 and "'sometimes' is not one of" in err
