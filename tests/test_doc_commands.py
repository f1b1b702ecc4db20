"""Every command shown in README.md and docs/ prints what the page says it prints.

The convention, the normalization of times and sizes, and the ``--update`` helper that re-blesses the
pages from real runs are described in tests/doc_commands.py and docs/architecture.md ("Docs that run").
Each page runs in its own temporary directory, its commands in order.
"""
from __future__ import annotations

import pytest

from tests import doc_commands as dc

PAGES = [p for p in dc.pages() if any(b.kind == "console" for b in dc.parse(p.read_text()))]
SLOW_PAGES = [p for p in PAGES if any("slow" in b.mode.split() for b in dc.parse(p.read_text()))]


def _ids(pages):
    return [str(p.relative_to(dc.REPO)) for p in pages]


def _check(page, tmp_path, slow):
    outcomes, problems = dc.run_page(page, tmp_path, slow=slow)
    failed = [o.report() for o in outcomes if not o.ok]
    assert not failed and not problems, (
        "\n".join(failed + problems)
        + "\nIf the change in output is intended: python3 -m tests.doc_commands --update --slow, then read the diff")


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_the_commands_of_a_page_print_what_the_page_shows(page, tmp_path):
    _check(page, tmp_path, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("page", SLOW_PAGES, ids=_ids(SLOW_PAGES))
def test_the_slow_commands_of_a_page_print_what_the_page_shows(page, tmp_path):
    _check(page, tmp_path, slow=True)


def test_the_readme_and_the_docs_have_commands_to_run():
    assert dc.REPO / "README.md" in PAGES
    assert len(PAGES) >= 5


def test_a_console_block_splits_into_commands_their_exit_status_and_their_output():
    page = "intro\n```console\n$ condcheck check a b  # exit 1\nline 1\n\n$ echo hi\nhi\n```\n"
    (block,) = dc.parse(page)
    first, second = block.commands
    assert (first.text, first.exit, first.expected) == ("condcheck check a b  # exit 1", 1, ["line 1", ""])
    assert (second.exit, second.expected) == (0, ["hi"])


def test_a_comment_before_a_block_marks_it_slow_or_torch_or_skipped():
    page = ("<!-- doc-test: slow torch -->\n```console\n$ true\n```\n\n```console\n$ true\n```\n"
            "<!-- doc-test: slow (a reason that mentions torch) -->\n```console\n$ true\n```\n")
    marked, plain, reasoned = dc.parse(page)
    assert marked.mode.split() == ["slow", "torch"] and plain.mode == "" and reasoned.mode == "slow"
    assert not dc.runs(marked, slow=True, torch=False) and dc.runs(marked, slow=True, torch=True)
    assert dc.runs(plain, slow=False, torch=False)


def test_times_and_sizes_are_normalized_and_an_ellipsis_line_matches_any_lines():
    assert dc.matches(["built in 0.2 s, peak  12.5 MiB", "...", "end"],
                      ["built in 13.75 s, peak 1,012.0 MiB", "a", "b", "end", ""])
    assert not dc.matches(["depth 6"], ["depth 7"])
    assert not dc.matches(["a", "...", "end"], ["a", "b"])


def test_update_rewrites_only_the_output_that_differs(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```console\n$ echo one\none\n$ echo two; exit 3\nold\n```\n")
    outcomes, _ = dc.run_page(page, tmp_path / "run", torch=False)
    assert [o.ok for o in outcomes] == [True, False]
    dc.update_page(page, outcomes)
    assert page.read_text() == "```console\n$ echo one\none\n$ echo two; exit 3  # exit 3\ntwo\n```\n"


def test_an_example_file_block_must_show_the_file_and_update_copies_it_in(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- doc-test: file examples/targets.py -->\n```python\nstale\n```\n")
    outcomes, problems = dc.run_page(page, tmp_path / "run", torch=False)
    assert outcomes == [] and len(problems) == 1 and "differs from examples/targets.py" in problems[0]
    dc.update_page(page, outcomes)
    shown = page.read_text().split("```python\n", 1)[1].rsplit("```", 1)[0]
    assert shown == (dc.EXAMPLES / "targets.py").read_text()
