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
