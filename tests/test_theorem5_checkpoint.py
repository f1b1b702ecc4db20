"""Checkpoints of spread constructions (condcheck/theorem5/checkpoint.py): chunk results kept on disk as
they arrive, read back by a run again with the same directory; the same network either way."""
import json

import pytest
from click.testing import CliRunner

import condcheck.theorem5 as t5
from condcheck.cli import main
from condcheck.errors import CondcheckError
from condcheck.targets import random_targets
from condcheck.theorem5 import checkpoint, spread
from theorem5_helpers import assert_same_network, spread_sample


@pytest.fixture
def small_spread(monkeypatch):
    """A float16 sample of 40 points spread over 4 chunks."""
    return spread_sample(monkeypatch, 40, 32, 10)


def _build(args, directory, jobs=1):
    stats = {}
    net, _ = t5.construct_theorem5("gelu", "float16", *args, jobs=jobs, stats=stats, checkpoint=directory)
    return net, stats


def _chunk_files(directory):
    return sorted(p.name for p in directory.rglob("chunk-*.pkl"))


def _no_search(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a chunk was searched although its result was kept")
    monkeypatch.setattr(spread, "speculate", refuse)


def test_every_chunk_run_is_kept_and_a_run_again_reads_them_all_and_searches_none(small_spread, tmp_path, monkeypatch):
    first, stats = _build(small_spread, tmp_path)
    assert stats["checkpoint_written"] == stats["chunk_runs"] and stats["checkpoint_read"] == 0
    assert len(_chunk_files(tmp_path)) == stats["chunk_runs"]
    _no_search(monkeypatch)
    again, stats2 = _build(small_spread, tmp_path)
    assert stats2["checkpoint_read"] == stats["chunk_runs"] and stats2["checkpoint_written"] == 0
    assert_same_network(first, again)


def test_a_run_stopped_midway_resumes_with_the_chunks_it_kept(small_spread, tmp_path, monkeypatch):
    whole, _ = _build(small_spread, tmp_path / "whole")
    real, calls = spread.speculate, []

    def stops_after_two(*a, **k):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*a, **k)
    monkeypatch.setattr(spread, "speculate", stops_after_two)
    with pytest.raises(KeyboardInterrupt):
        _build(small_spread, tmp_path / "cut")
    assert len(_chunk_files(tmp_path / "cut")) == 2
    monkeypatch.setattr(spread, "speculate", real)
    resumed, stats = _build(small_spread, tmp_path / "cut")
    assert stats["checkpoint_read"] == 2 and stats["checkpoint_written"] == stats["chunk_runs"] - 2
    assert_same_network(whole, resumed)


def test_a_damaged_chunk_file_is_run_again_and_written_anew(small_spread, tmp_path):
    first, stats = _build(small_spread, tmp_path)
    damaged = sorted(tmp_path.rglob("chunk-*.pkl"))[0]
    damaged.write_bytes(damaged.read_bytes()[:100])
    again, stats2 = _build(small_spread, tmp_path)
    assert stats2["checkpoint_unreadable"] == 1 and stats2["checkpoint_written"] == 1
    assert stats2["checkpoint_read"] == stats["chunk_runs"] - 1
    assert_same_network(first, again)


def test_another_construction_in_the_same_directory_reads_nothing_of_the_first(small_spread, tmp_path):
    _build(small_spread, tmp_path)
    X, f, h, g = small_spread
    other = random_targets("float16", X, 4, 0.25)
    _, stats = _build((X, *other), tmp_path)
    assert stats["checkpoint_read"] == 0 and stats["checkpoint_written"] == stats["chunk_runs"]
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 2


def test_chunk_results_from_dask_workers_are_kept_and_read_back(small_spread, tmp_path, monkeypatch):
    there, stats = _build(small_spread, tmp_path, jobs=2)
    assert stats["checkpoint_written"] == stats["chunk_runs"] == len(_chunk_files(tmp_path))
    _no_search(monkeypatch)
    here, stats2 = _build(small_spread, tmp_path, jobs=1)
    assert stats2["checkpoint_read"] == stats["chunk_runs"]
    assert_same_network(there, here)


def test_a_directory_of_other_search_code_is_refused_in_one_line(small_spread, tmp_path):
    (tmp_path / checkpoint.INDEX).write_text(json.dumps({"search_code": "0" * 64}))
    with pytest.raises(CondcheckError, match="other search code") as e:
        _build(small_spread, tmp_path)
    assert "\n" not in str(e.value)


def test_a_directory_with_other_files_and_no_index_is_refused(small_spread, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(CondcheckError, match="not empty"):
        _build(small_spread, tmp_path)


def test_a_construction_that_does_not_spread_refuses_a_checkpoint(tmp_path):
    with pytest.raises(CondcheckError, match="only constructions spread in chunks"):
        t5.construct_theorem5("relu", "float8_e4m3", [[-1.0], [0.5]], [0.25, 2.0], [1.0, 0.5], [[3.0], [-0.5]],
                              checkpoint=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def fake_sources(tmp_path, monkeypatch):
    """A condcheck and a conditions package of a few lines each, in place of the real ones."""
    import conditions
    root, cond = tmp_path / "condcheck", tmp_path / "conditions"
    (root / "theorem5").mkdir(parents=True)
    cond.mkdir()
    for path in (root / "ops.py", root / "cli.py", root / "theorem5" / "spread.py", cond / "condition2.py"):
        path.write_text("x = 1\n")
    (root / "theorem5" / "checkpoint.py").write_text("")
    (cond / "__init__.py").write_text("")
    monkeypatch.setattr(checkpoint, "__file__", str(root / "theorem5" / "checkpoint.py"))
    monkeypatch.setattr(conditions, "__file__", str(cond / "__init__.py"))
    return root, cond


def test_the_search_code_hash_leaves_out_the_modules_that_only_run_or_check_the_chunks(fake_sources):
    root, _ = fake_sources
    before = checkpoint.search_code_hash()
    (root / "cli.py").write_text("x = 2\n")
    (root / "theorem5" / "spread.py").write_text("x = 2\n")
    assert checkpoint.search_code_hash() == before
    (root / "ops.py").write_text("x = 2\n")
    assert checkpoint.search_code_hash() != before


def test_the_search_code_hash_follows_the_condition_checkers_that_give_the_witnesses(fake_sources):
    _, cond = fake_sources
    before = checkpoint.search_code_hash()
    (cond / "condition2.py").write_text("x = 2\n")
    assert checkpoint.search_code_hash() != before


def test_the_cli_refuses_a_checkpoint_that_is_a_file(tmp_path):
    path = tmp_path / "file"
    path.write_text("")
    res = CliRunner().invoke(main, ["construct", "theorem5", "gelu", "float16", "--checkpoint", str(path),
                                    "--out", str(tmp_path / "net.json")])
    assert res.exit_code == 2 and "--checkpoint" in res.output and "Traceback" not in res.output


def test_the_cli_resumes_from_its_checkpoint_and_says_how_many_chunks_it_read(tmp_path, monkeypatch):
    monkeypatch.setattr(t5.tuning, "SPREAD_FROM", 32)
    monkeypatch.setattr(t5.tuning, "SPREAD_CHUNK_POINTS", 10)
    args = ["construct", "theorem5", "gelu", "float16", "--domain", "sample:40:3", "--jobs", "1", "--json",
            "--checkpoint", str(tmp_path / "ck")]
    first = CliRunner().invoke(main, args + ["--out", str(tmp_path / "a.json")])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(main, args + ["--out", str(tmp_path / "b.json")])
    assert again.exit_code == 0, again.output
    one, two = json.loads(first.stdout), json.loads(again.stdout)
    assert one["checkpoint_written"] == one["chunk_runs"] == two["checkpoint_read"] > 1
    assert two["checkpoint_written"] == 0
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


def test_the_cli_in_the_lines_style_says_when_the_assembly_and_the_writing_start_and_end(tmp_path, monkeypatch):
    monkeypatch.setattr(t5.tuning, "SPREAD_FROM", 32)
    monkeypatch.setattr(t5.tuning, "SPREAD_CHUNK_POINTS", 10)
    res = CliRunner().invoke(main, ["--progress", "lines", "construct", "theorem5", "gelu", "float16", "--domain",
                                    "sample:40:3", "--jobs", "1", "--out", str(tmp_path / "net.json")])
    assert res.exit_code == 0, res.output
    lines = res.stderr.splitlines()
    for phase in ("assembling the network", f"writing {tmp_path / 'net.json'}"):
        assert f"{phase}: started" in lines and any(x.startswith(f"{phase}: ended after") for x in lines)
    assert lines[0].startswith("constructing (gradients, then values): 0/80 ")
