"""Errors raise dpq.Error subclasses named for what went wrong, with the prompt's diagnostic."""

from __future__ import annotations

import pickle

import pytest

import dpq
from conftest import cli

CASES = [
    ("COUTN WHERE age < 30 WITH EPS 0.1;", dpq.SyntaxError),
    ("COUNT WHERE agee < 30 WITH EPS 0.1;", dpq.UnknownName),
    ("USE nothing;", dpq.UnknownName),
    ("COUNT WHERE age < 30 WITH EPS -1;", dpq.InvalidQuery),
    ("COUNT WHERE age < 30 WITH EPS 5;", dpq.BudgetExceeded),
    ("LOAD 'examples/data/no-such-file.csv' AS x;", dpq.DataError),
    ("LOAD 'examples/data/people.csv' AS people;", dpq.Refused),
]


@pytest.mark.parametrize("statement,kind", CASES)
def test_each_error_raises_its_class_with_the_prompts_diagnostic(dpq_bin, state, statement, kind):
    text = "LOAD 'examples/data/people.csv' AS people;\n" + statement
    with pytest.raises(kind) as raised:
        dpq.Session(practice=True).run(text, origin="-c")
    e = raised.value
    assert isinstance(e, dpq.Error)
    # The command line prints the same diagnostic for the same text, on standard error.
    done = cli(dpq_bin, None, "--practice", "-c", text, check=False)
    assert done.returncode != 0
    assert str(e) == done.stderr.rstrip("\n")
    assert e.line == 2


def test_an_error_says_where_and_keeps_the_results_before_it(state):
    s = dpq.Session(state_dir=state)
    with pytest.raises(dpq.UnknownName) as raised:
        s.run("LOAD 'examples/data/people.csv' AS people;\nCOUNT WHERE age < 30 WITH EPS 0.1;\nCOUNT WHERE agee < 30 WITH EPS 0.1;\nCOUNT WHERE age < 40 WITH EPS 0.1;")
    e = raised.value
    assert (e.line, e.column) == (3, 13)
    assert str(e).startswith("<python>:3:13: unknown column `agee` in table `people`")
    assert "^^^^" in str(e)
    assert e.help and "columns:" in e.help
    assert [r.kind for r in e.results] == ["loaded", "count"]
    assert e.to_dict()["kind"] == "error" and e.to_dict()["line"] == 3
    # The statement after the error did not run: one release, 0.1 spent.
    [b] = s.run("SHOW BUDGET;")
    assert b.to_dict()["spent"] == 0.1


def test_a_refused_statement_changes_nothing(state):
    s = dpq.Session(state_dir=state)
    s.load("examples/data/people.csv", "people")
    s.run("COUNT WHERE age < 30 WITH EPS 0.9;")
    with pytest.raises(dpq.BudgetExceeded, match="0.1 remains"):
        s.run("COUNT WHERE age < 40 WITH EPS 0.2;")
    [b] = s.run("SHOW BUDGET;")
    assert b.to_dict()["spent"] == 0.9 and len(b.rows()) == 1


def test_errors_pickle_and_render_in_ipython():
    s = dpq.Session(practice=True)
    with pytest.raises(dpq.SyntaxError) as raised:
        s.run("COUNT WHERE;")
    e = raised.value
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is dpq.SyntaxError and str(again) == str(e) and again.line == e.line
    assert e._render_traceback_() == str(e).splitlines()


def test_a_bad_state_directory_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DPQ_STATE_DIR", "relative/dir")
    with pytest.raises(dpq.Error, match="absolute"):
        dpq.Session()
