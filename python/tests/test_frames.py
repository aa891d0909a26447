"""DataFrames in: the same table as a CSV path, a pandas, a Polars or a pyarrow table gives
the same answers, and the same rows find the same budget."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import dpq
from conftest import PEOPLE, ROOT

QUESTIONS = """\
COUNT WHERE age <= 30 WITH EPS 0.1 PRIOR p=0.3;
COUNT WHERE sex = 'F' AND income > 50000 WITH EPS 0.1;
COUNT WHERE region IN ('North', 'South') OR smoker = TRUE WITH EPS 0.2;
CUBE BY age (30, 65), sex ('F', 'M');
HISTOGRAM WITH EPS 0.1;
COUNT BY sex WITH EPS 0.1;
SUM income CLAMP (0, 200000) WITH EPS 0.1;
MEAN height_cm CLAMP (100, 220) WITH EPS 0.2;
"""


def pandas_people() -> pd.DataFrame:
    # pandas reads a missing number as NaN (and so the column as floats), a missing text
    # as NaN too; None is written in by hand where a text is missing.
    frame = pd.read_csv(PEOPLE)
    assert frame["age"].isna().any()
    frame["sex"] = frame["sex"].astype(object).where(frame["sex"].notna(), None)
    return frame


def sources():
    return {
        "csv": str(PEOPLE),
        "pandas": pandas_people(),
        "polars": pl.read_csv(PEOPLE, null_values=["NA"]),
        "pyarrow": pacsv.read_csv(PEOPLE, convert_options=pacsv.ConvertOptions(strings_can_be_null=True)),
    }


def answers(data) -> list[dict]:
    s = dpq.Session(practice=True, seed=11)
    s.load(data, "people")
    return [r.to_dict() for r in s.run(QUESTIONS)]


def test_the_same_table_in_four_forms_gives_identical_seeded_answers():
    got = {name: answers(data) for name, data in sources().items()}
    reference = got.pop("csv")
    assert len(reference) == 8
    for name, results in got.items():
        assert results == reference, name


def test_a_dataframes_types_are_read_as_parquets():
    s = dpq.Session(practice=True)
    loaded = s.load(pl.read_csv(PEOPLE, null_values=["NA"]), "people").to_dict()
    types = {c["name"]: c["type"] for c in loaded["columns"]}
    assert types == {
        "id": "integer",
        "age": "integer",
        "sex": "text",
        "income": "integer",
        "region": "text",
        "education": "text",
        "employed": "boolean",
        "height_cm": "float",
        "smoker": "boolean",
    }
    assert loaded["path"] == "<polars DataFrame>"
    assert loaded["n"] == 10000


def test_the_same_rows_find_the_same_budget_whichever_library_holds_them(state):
    s = dpq.Session(state_dir=state)
    s.load(pandas_people(), "people")
    s.run("COUNT WHERE age <= 30 WITH EPS 0.1;")
    t = dpq.Session(state_dir=state)
    t.load(pl.read_csv(PEOPLE, null_values=["NA"]), "people")
    [b] = t.run("SHOW BUDGET;")
    assert b.to_dict()["spent"] == 0.1
    # A new interpreter, the rows read anew: the same budget.
    code = f"""
import dpq, pyarrow.csv as c
s = dpq.Session(state_dir={str(state)!r})
s.load(c.read_csv({str(PEOPLE)!r}, convert_options=c.ConvertOptions(strings_can_be_null=True)), 'people')
print(s.run('SHOW BUDGET;')[0].to_dict()['spent'])
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0.1"


def test_other_rows_have_a_budget_of_their_own(state):
    s = dpq.Session(state_dir=state)
    s.load(pl.read_csv(PEOPLE, null_values=["NA"]), "people")
    s.run("COUNT WHERE age <= 30 WITH EPS 0.1;")
    s.load(pl.read_csv(PEOPLE, null_values=["NA"]).tail(9999), "fewer")
    [b] = s.run("SHOW BUDGET;")
    assert b.to_dict()["spent"] == 0


def test_nan_none_and_null_are_one_missing_value(state):
    with_nan = pd.DataFrame({"x": [1.5, float("nan"), 2.5], "t": ["a", None, "b"]})
    with_null = pl.DataFrame({"x": [1.5, None, 2.5], "t": ["a", None, "b"]})
    s = dpq.Session(state_dir=state)
    s.load(with_nan, "a")
    s.run("COUNT WHERE x > 2 WITH EPS 0.5;")
    s.load(with_null, "b")
    [b] = s.run("SHOW BUDGET;")
    assert b.to_dict()["spent"] == 0.5


def test_a_column_dpq_does_not_read_is_refused_by_name():
    frame = pa.table({"ok": [1, 2], "blob": pa.array([b"x", b"y"], type=pa.binary())})
    s = dpq.Session(practice=True)
    with pytest.raises(dpq.DataError) as raised:
        s.load(frame, "t")
    assert "blob" in str(raised.value) and "binary" in str(raised.value)
    assert s.tables() == []


def test_repeated_column_names_are_refused():
    frame = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(dpq.DataError, match="twice"):
        dpq.Session(practice=True).load(frame, "t")


def test_what_is_no_table_is_refused():
    with pytest.raises(TypeError, match="__arrow_c_stream__"):
        dpq.Session(practice=True).load(42, "t")
    with pytest.raises(TypeError, match="no option"):
        dpq.Session(practice=True).load(str(PEOPLE), "t", neighbors="replace")


def test_load_options_are_the_clauses_of_load():
    s = dpq.Session(practice=True)
    r = s.load(pl.read_csv(PEOPLE, null_values=["NA"]), "people", neighbours="add_remove").to_dict()
    assert r["neighbours"] == "add_remove" and r["n"] is None
    frame = pl.DataFrame({"person": [1, 1, 2], "v": [1, 2, 3]})
    r = s.load(frame, "visits", privacy_unit="person", max_rows=2).to_dict()
    assert r["unit"] is not None
    with pytest.raises(dpq.DataError, match="COLUMNS"):
        s.load(frame, "x", columns="v integer")
