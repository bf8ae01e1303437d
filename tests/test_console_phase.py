"""The phase line of the shared console (``animat.console.phase``): what a verb is doing during a step with no
count to show, and how long it took."""

import re

import pytest

from animat.console import phase, progress, use_json

LINE = re.compile(r"^rendering media/x\.gif: \d+\.\d s$", re.MULTILINE)


def test_a_phase_ends_with_one_line_naming_it_and_its_seconds(capsys):
    with phase("rendering media/x.gif"):
        pass
    out = capsys.readouterr().out
    assert LINE.fullmatch(out.strip()), out


def test_a_phase_inside_a_progress_bar_still_prints_its_line(capsys):
    with progress("gen") as bar:
        task = bar.add_task("x", total=1)
        with phase("rendering media/x.gif"):
            bar.update(task, completed=1)
    assert LINE.search(capsys.readouterr().out)


def test_a_failed_phase_prints_no_line_and_lets_the_error_through(capsys):
    with pytest.raises(ValueError):
        with phase("rendering media/x.gif"):
            raise ValueError("boom")
    assert "rendering" not in capsys.readouterr().out


def test_under_json_the_phase_line_goes_to_stderr(capsys):
    try:
        use_json(True)
        with phase("rendering media/x.gif"):
            pass
        captured = capsys.readouterr()
    finally:
        use_json(False)
    assert captured.out == "" and LINE.search(captured.err)
