"""Nothing leaks through Python: no raw value, row or true count in what a session, a result
or an error shows, pickles or holds, and no reference to a DataFrame once it is loaded."""

from __future__ import annotations

import gc
import pickle
import sys
import warnings
import weakref

import pandas as pd
import polars as pl
import pytest

import dpq

# Values of the table that no statement names: any of them in an output is a leak.
CANARIES = ["ZEBRA_CANARY_91f2", "QUOKKA_CANARY_03be", "777123456789", "31337.4242"]

STATEMENTS = """\
DESCRIBE t;
SHOW TABLES;
COUNT WHERE age < 40 WITH EPS 0.1 PRIOR p=0.5;
COUNT WHERE score > 100 WITH EPS 0.1;
CUBE BY age (30, 50), kind ('a', 'b');
HISTOGRAM WITH EPS 0.1;
COUNT BY kind WITH EPS 0.1;
SUM score CLAMP (0, 1000) WITH EPS 0.1;
MEAN score CLAMP (0, 1000) WITH EPS 0.1;
ESTIMATE COUNT WHERE age < 30;
EXPLAIN COUNT WHERE age < 30 WITH EPS 0.1;
SHOW BUDGET;
SHOW HISTORY;
"""

# Statements that fail or are answered (outside the cube): whichever, nothing leaks.
PROBES = [
    "COUNT WHERE secret < 3 WITH EPS 0.1;",
    "COUNT WHERE name < 3 WITH EPS 0.1;",
    "COUNT WHERE age < 30 WITH EPS 50;",
    "COUNT BY name WITH EPS 0.1;",
    "SUM name CLAMP (0, 1) WITH EPS 0.1;",
    "COUNT WHERE kind = 'c' WITH EPS 0.1;",
]


def table(n: int = 400) -> dict[str, list]:
    rows = {
        "name": [f"person{i}" for i in range(n)],
        "age": [18 + (i * 7) % 60 for i in range(n)],
        "kind": ["a" if i % 3 else "b" for i in range(n)],
        "score": [float((i * 37) % 1000) for i in range(n)],
        "secret": [i for i in range(n)],
    }
    rows["name"][5] = CANARIES[0]
    rows["name"][6] = CANARIES[1]
    rows["secret"][7] = int(CANARIES[2])
    rows["score"][8] = float(CANARIES[3])
    return rows


def assert_clean(text: str, what: str) -> None:
    for c in CANARIES:
        assert c not in text, f"{what} shows {c}"


def check_result(r: dpq.Result) -> None:
    for text, what in [
        (str(r), "str"),
        (repr(r), "repr"),
        (r.to_json(), "to_json"),
        (r._repr_html_(), "html"),
        (repr(pickle.dumps(r)), "pickle"),
        (repr(r.to_dict()), "to_dict"),
    ]:
        assert_clean(text, f"{r.kind}: {what}")
    if r.tables():
        assert_clean(r.to_pandas().to_string(), f"{r.kind}: to_pandas")


def sources(tmp_path):
    rows = table()
    path = tmp_path / "t.csv"
    pl.DataFrame(rows).write_csv(path)
    return {"csv": str(path), "pandas": pd.DataFrame(rows), "polars": pl.DataFrame(rows)}


@pytest.mark.parametrize("form", ["csv", "pandas", "polars"])
def test_no_value_of_the_table_in_any_result_or_error(tmp_path, form):
    data = sources(tmp_path)[form]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = dpq.Session(state_dir=tmp_path / "state")
        loaded = s.load(data, "t")
        check_result(loaded)
        for r in s.run(STATEMENTS):
            check_result(r)
        failed = 0
        for statement in PROBES:
            try:
                for r in s.run(statement):
                    check_result(r)
                continue
            except dpq.Error as raised:
                e = raised
                failed += 1
            for text, what in [
                (str(e), "str"),
                (repr(e), "repr"),
                (repr(e.__dict__), "__dict__"),
                (repr(pickle.dumps(e)), "pickle"),
                (repr(e.to_dict()), "to_dict"),
            ]:
                assert_clean(text, f"{statement}: {what}")
        assert failed == 4
    for w in caught:
        assert_clean(str(w.message), "a warning")
    assert_clean(repr(s), "the session's repr")
    assert not hasattr(s, "__dict__")
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(s)
    # The state directory holds the ledger, never a value.
    for f in (tmp_path / "state").rglob("*"):
        if f.is_file():
            assert_clean(f.read_bytes().decode("utf-8", "replace"), f"the file {f.name}")


def test_a_loaded_frame_is_not_kept(tmp_path):
    frame = pl.DataFrame(table())
    alive = weakref.ref(frame)
    before = sys.getrefcount(frame)
    s = dpq.Session(practice=True)
    s.load(frame, "t")
    assert sys.getrefcount(frame) == before
    del frame
    gc.collect()
    assert alive() is None
    # The session still answers: it holds what it read, not the frame.
    [r] = s.run("COUNT WHERE age < 40 WITH EPS 0.1;")
    assert r.kind == "count"


def test_a_pandas_frame_is_not_kept_either():
    frame = pd.DataFrame(table())
    alive = weakref.ref(frame)
    s = dpq.Session(practice=True)
    s.load(frame, "t")
    del frame
    gc.collect()
    assert alive() is None
    assert s.tables() == ["t"]
