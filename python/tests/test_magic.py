"""The notebook magic in an IPython shell: %%dpq cells, %dpq lines, -o and -s."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

import dpq


@pytest.fixture
def shell(state):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "dpq")
    ip.user_ns["mine"] = dpq.Session(state_dir=state)
    ip.user_ns["mine"].load("examples/data/people.csv", "people")
    yield ip
    InteractiveShell.clear_instance()


def test_a_cell_runs_in_the_named_session_and_binds_its_last_result(shell, capsys):
    shell.run_cell_magic("dpq", "-s mine -o last", "COUNT WHERE age < 30 WITH EPS 0.1;\nSHOW BUDGET;")
    last = shell.user_ns["last"]
    assert isinstance(last, dpq.Result) and last.kind == "budget"
    assert last.to_dict()["spent"] == 0.1
    shown = capsys.readouterr().out
    assert "noisy count" in shown and "0.1 spent" in shown


def test_a_line_runs_one_statement_in_the_last_session_opened(shell, capsys):
    shell.run_line_magic("dpq", "COUNT WHERE age < 30 WITH EPS 0.1;")
    assert "noisy count" in capsys.readouterr().out


def test_an_error_shows_the_results_before_it_and_the_diagnostic(shell, capsys):
    with pytest.raises(dpq.UnknownName) as raised:
        shell.run_cell_magic("dpq", "-s mine -o last", "COUNT WHERE age < 30 WITH EPS 0.1;\nCOUNT WHERE agee < 30 WITH EPS 0.1;")
    assert str(raised.value).startswith("cell:2:13: unknown column")
    assert "noisy count" in capsys.readouterr().out
    assert shell.user_ns["last"].kind == "count"


def test_naming_no_such_session_is_an_error(shell):
    with pytest.raises(dpq.Error, match="no variable"):
        shell.run_cell_magic("dpq", "-s nobody", "SHOW TABLES;")


def test_a_cells_chart_is_displayed_inline_as_html(shell, tmp_path):
    from IPython.utils.capture import capture_output

    chart = tmp_path / "by_sex.svg"
    with capture_output() as captured:
        shell.run_cell_magic("dpq", "-s mine", f"CUBE BY sex ('F', 'M');\nCOUNT BY sex WITH EPS 0.1 PLOT '{chart}';")
    html = [o.data.get("text/html", "") for o in captured.outputs]
    assert len(html) == 2
    assert "<table>" in html[1] and "data:image/svg+xml;base64," in html[1]
