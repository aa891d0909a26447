"""A Python session is the prompt's session: the same answers, the same ledgers on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dpq
from conftest import ROOT, cli

SCRIPT = """\
LOAD 'examples/data/people.csv' AS people;
COUNT WHERE age <= 30 WITH EPS 0.1 PRIOR p=0.3;
COUNT WHERE age <= 30 AND smoker = TRUE WITH EPS 0.2;
CHOOSE EPS WITHIN 20% AT 0.8 FOR 100;
CUBE BY age (30, 65), sex ('F', 'M');
HISTOGRAM WITH EPS 0.1;
COUNT BY sex WITH EPS 0.1;
SUM income CLAMP (0, 200000) WITH EPS 0.1;
COUNT WHERE age <= 30 WITH EPS 0.1 PRIOR p=0.3;
DESCRIBE people;
"""


def test_the_same_seeded_script_gives_byte_identical_json_from_the_command_line(dpq_bin, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    out = cli(dpq_bin, a, "--seed", "7", "--format", "json", "-c", SCRIPT).stdout
    from_cli = out.splitlines()
    session = dpq.Session(state_dir=b, seed=7)
    from_python = [r.to_json() for r in session.run(SCRIPT)]
    assert len(from_cli) == 10
    assert from_python == from_cli
    kinds = [json.loads(line)["kind"] for line in from_cli]
    assert kinds[:3] == ["loaded", "count", "count"]
    assert kinds[5:8] == ["histogram", "histogram", "sum"]


def test_a_notebook_and_the_command_line_share_one_budget(dpq_bin, state):
    s = dpq.Session(state_dir=state)
    s.load("examples/data/people.csv", "people")
    s.run("COUNT WHERE age <= 30 WITH EPS 0.1;")
    shown = cli(dpq_bin, state, "--format", "json", "-c", "LOAD 'examples/data/people.csv' AS p; SHOW BUDGET;")
    budget = json.loads(shown.stdout.splitlines()[-1])
    assert budget["spent"] == 0.1
    cli(dpq_bin, state, "-c", "LOAD 'examples/data/people.csv' AS p; COUNT WHERE sex = 'F' WITH EPS 0.2;")
    again = dpq.Session(state_dir=state)
    again.load("examples/data/people.csv", "people")
    [b] = again.run("SHOW BUDGET;")
    assert b.to_dict()["spent"] == pytest.approx(0.3, abs=1e-12)
    assert [row["statement"] for row in b.rows()] == [
        "COUNT WHERE age <= 30 WITH EPS 0.1",
        "COUNT WHERE sex = 'F' WITH EPS 0.2",
    ]


def _in_new_interpreter(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_budget_survives_a_new_interpreter(state):
    spend = f"""
import dpq
s = dpq.Session(state_dir={str(state)!r})
s.load('examples/data/people.csv', 'people')
print(s.run('COUNT WHERE age > 60 WITH EPS 0.25;')[0].to_dict()['budget_remaining'])
"""
    assert _in_new_interpreter(spend).strip() == "0.75"
    look = f"""
import dpq
s = dpq.Session(state_dir={str(state)!r})
s.load('examples/data/people.csv', 'people')
r = s.run('COUNT WHERE age > 60 WITH EPS 0.25;')[0].to_dict()
print(r['from_history'], r['budget_remaining'])
"""
    # The same question in a new process is answered from the ledger, at no cost.
    assert _in_new_interpreter(look).split() == ["True", "0.75"]


def test_a_statement_run_twice_is_answered_from_the_history_at_no_cost(state):
    s = dpq.Session(state_dir=state)
    s.load("examples/data/people.csv", "people")
    [first] = s.run("COUNT WHERE age <= 30 WITH EPS 0.1;")
    [second] = s.run("COUNT WHERE age <= 30 WITH EPS 0.1;")
    assert not first.to_dict()["from_history"]
    assert second.to_dict()["from_history"]
    assert second.to_dict()["noisy"] == first.to_dict()["noisy"]
    assert second.to_dict()["budget_spent"] == 0.1


def test_practice_reads_and_writes_no_ledger(state):
    s = dpq.Session(state_dir=state, practice=True)
    s.load("examples/data/people.csv", "people")
    [r] = s.run("COUNT WHERE age <= 30 WITH EPS 0.1;")
    assert r.to_dict()["practice"] is True
    assert "practice" in str(r)
    assert not any(state.iterdir())


def test_results_as_tables(state):
    s = dpq.Session(state_dir=state, seed=3)
    s.load("examples/data/people.csv", "people")
    s.run("CUBE BY age (30, 65), sex ('F', 'M');")
    [h] = s.run("HISTOGRAM WITH EPS 0.1;")
    assert h.kind == "histogram"
    frame = h.to_pandas()
    assert list(frame.columns[:4]) == ["cell", "noisy", "interval95_low", "interval95_high"]
    assert len(frame) == 16
    assert h.to_polars().shape == (16, frame.shape[1])
    assert h.to_arrow().num_rows == 16
    assert frame["noisy"].tolist() == [c["noisy"] for c in h.to_dict()["cells"]]
    [b] = s.run("SHOW BUDGET;")
    assert b.tables() == ("spending", "cells")
    assert len(b.to_pandas("cells")) == 16
    [hist] = s.run("SHOW HISTORY;")
    assert len(hist.to_pandas()) == 16
    [t] = s.run("SHOW TABLES;")
    assert t.to_pandas()["name"].tolist() == ["people"]
    [c] = s.run("COUNT WHERE age < 30 WITH EPS 0.1;")
    with pytest.raises(TypeError, match="not a table"):
        c.to_pandas()


def test_html_shows_the_table_and_the_charts_inline(state, tmp_path):
    s = dpq.Session(state_dir=state, seed=3)
    s.load("examples/data/people.csv", "people")
    s.run("CUBE BY age (30, 65), sex ('F', 'M');")
    chart = tmp_path / "h.svg"
    [h] = s.run(f"COUNT BY sex WITH EPS 0.1 PLOT '{chart}';")
    page = h._repr_html_()
    assert "<table>" in page and "sex = &#x27;F&#x27;" in page
    assert len(h.charts) == 1 and h.charts[0][0] == str(chart)
    assert h.charts[0][1] == chart.read_text()
    assert "data:image/svg+xml;base64," in page
    [c] = s.run("COUNT WHERE age < 30 WITH EPS 0.1;")
    assert c._repr_html_().startswith('<div class="dpq-result"><pre>COUNT WHERE age &lt; 30')


def test_help_is_the_prompts():
    assert "COUNT" in dpq.help()
    assert "WITH EPS" in dpq.help("COUNT")


def test_a_postgresql_table_loads_as_in_the_language(state):
    conninfo = os.environ.get("DPQ_TEST_POSTGRES")
    if not conninfo:
        if os.environ.get("DPQ_REQUIRE_POSTGRES"):
            pytest.fail("DPQ_REQUIRE_POSTGRES is set but DPQ_TEST_POSTGRES names no server")
        pytest.skip("DPQ_TEST_POSTGRES is not set (bash .ci/postgres.sh starts a server)")
    table = f"py_people_{os.getpid()}"
    sql = (
        f"DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (age integer, sex text);"
        f"INSERT INTO {table} SELECT 18 + (g * 7) % 60, CASE WHEN g % 2 = 0 THEN 'F' ELSE 'M' END FROM generate_series(1, 500) g;"
    )
    subprocess.run(["psql", conninfo, "-q", "-c", sql], check=True, capture_output=True)
    s = dpq.Session(state_dir=state)
    loaded = s.load(conninfo, "people", table=table)
    d = loaded.to_dict()
    assert d["n"] == 500 and d["path"] == f"PostgreSQL table {table}"
    assert conninfo not in str(loaded) and conninfo not in loaded.to_json()
    [r] = s.run("COUNT WHERE age < 30 WITH EPS 0.1;")
    assert r.kind == "count"


def test_a_simulation_figure_shows_inline(tmp_path):
    s = dpq.Session(practice=True, seed=4)
    figure = tmp_path / "sim.svg"
    [r] = s.run(f"SIMULATE N 100 P 0.3 EPS (0.1, 1) RUNS 2000 PLOT '{figure}';")
    assert [name for name, _ in r.charts] == [str(figure)]
    assert r.charts[0][1].lstrip().startswith("<svg")
    assert "data:image/svg+xml;base64," in r._repr_html_()


def test_importing_dpq_imports_no_dataframe_library():
    code = "import sys, dpq; print(sorted(m for m in ('pandas', 'polars', 'pyarrow', 'numpy', 'IPython') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    # Loading a Polars frame imports neither pandas nor pyarrow.
    code = (
        "import sys, dpq, polars as pl; s = dpq.Session(practice=True); "
        "s.load(pl.DataFrame({'a': [1, 2]}), 't'); "
        "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
