"""`condcheck bench CASES`: which benchmark cases a command line selects, and how repeated runs report."""
import pytest

from condcheck import bench


def test_a_whole_case_name_selects_only_that_case_even_when_it_prefixes_another():
    assert "theorem5-gelu-float8_e4m3-box2" in bench.CASES
    assert bench.select(["theorem5-gelu-float8_e4m3-box"]) == ["theorem5-gelu-float8_e4m3-box"]


def test_a_prefix_selects_every_case_it_begins():
    got = bench.select(["theorem5-gelu-float8_e4m3-"])
    assert {"theorem5-gelu-float8_e4m3-box", "theorem5-gelu-float8_e4m3-box2",
            "theorem5-gelu-float8_e4m3-grid64"} <= set(got)
    assert all(n.startswith("theorem5-gelu-float8_e4m3-") for n in got)


def test_no_argument_selects_every_case():
    assert bench.select([]) == list(bench.CASES)


def test_an_unknown_name_selects_nothing():
    assert bench.select(["no-such-benchmark"]) == []


def test_repeated_runs_report_the_fastest_run_and_every_time():
    seen = []
    (res,) = bench.run(["check-float6_e3m2fn-relu"], seen.append, repeat=2)
    assert seen == [res] and len(res["runs"]) == 2
    assert res["seconds"] == min(res["runs"]) and res["cpu_seconds"] > 0 and "detail" in res


def test_each_run_reports_the_machine_reference_time_measured_in_its_own_process():
    seen = []
    (res,) = bench.run(["check-float6_e3m2fn-relu"], seen.append, repeat=2)
    assert len(res["reference_runs"]) == 2 and all(t > 0 for t in res["reference_runs"])
    assert res["reference_seconds"] in res["reference_runs"]


def test_a_case_imports_the_modules_of_its_prefix_before_its_clock_starts(monkeypatch):
    import sys
    sys.modules.pop("colorsys", None)
    seen = []
    monkeypatch.setitem(bench.IMPORTS, "fake-", ("colorsys",))
    monkeypatch.setitem(bench.CASES, "fake-case", (lambda: seen.append("colorsys" in sys.modules) or "done", "none"))
    monkeypatch.setattr(bench, "machine_reference", lambda: 0.0)
    res = bench.run_case("fake-case")
    assert seen == [True] and res["detail"] == "done"



def test_the_front_door_cases_time_whole_processes_of_the_command_line():
    assert {"front-door-help", "front-door-check", "front-door-verify-vs-construct"} <= set(bench.CASES)
    seconds, cpu, peak = bench.whole_process(["--help"])
    assert seconds > 0 and cpu > 0 and peak > 1


def test_a_front_door_process_that_fails_is_reported_not_timed():
    with pytest.raises(RuntimeError, match="exited with 2"):
        bench.whole_process(["check", "no-such-activation", "float8_e4m3"])
