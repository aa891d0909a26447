"""Loading a Polars DataFrame into dpq and one COUNT, against Polars' own filter-and-count on
the same frame, interleaved round by round in one process (the machine is shared: ratios
measured side by side hold, absolute times do not).

    python python/bench/frames.py [ROWS] [ROUNDS]      # default 10,000,000 rows, 5 rounds

Needs a release build of the module (`pip install .`) and polars. Prints the median of each,
and their ratios (Polars' time over dpq's: above 1, dpq is faster): for loading the frame and
a first COUNT, and for each COUNT after it on the loaded table.
"""

from __future__ import annotations

import statistics
import sys
import time

import polars as pl

import dpq


def frame(rows: int) -> pl.DataFrame:
    """A table like examples/data/people.csv: ages, sexes, incomes and heights, spread by a
    hash of the row number (seeded: the same frame at every run)."""
    i = pl.int_range(0, rows, eager=True)
    return pl.DataFrame(
        {
            "id": i,
            "age": (i.hash(1) % 90).cast(pl.Int64) + 18,
            "sex": pl.Series(["F", "M"]).gather((i.hash(2) % 2).cast(pl.UInt32)),
            "income": (i.hash(3) % 200_000).cast(pl.Int64),
            "height_cm": (i.hash(4) % 600).cast(pl.Float64) / 10 + 150,
        }
    )


def dpq_round(data: pl.DataFrame) -> float:
    start = time.perf_counter()
    s = dpq.Session(practice=True)
    s.load(data, "people")
    [r] = s.run("COUNT WHERE age <= 30 WITH EPS 0.1;")
    assert r.kind == "count"
    return time.perf_counter() - start


def dpq_question(s: dpq.Session, age: int) -> float:
    """One new COUNT on a table already loaded (a new condition each time: no answer from the
    history)."""
    start = time.perf_counter()
    [r] = s.run(f"COUNT WHERE age <= {age} WITH EPS 0.1;")
    assert not r.to_dict()["from_history"]
    return time.perf_counter() - start


def polars_question(data: pl.DataFrame, age: int) -> float:
    start = time.perf_counter()
    n = data.filter(pl.col("age") <= age).height
    assert n >= 0
    return time.perf_counter() - start


def polars_round(data: pl.DataFrame) -> float:
    start = time.perf_counter()
    n = data.filter(pl.col("age") <= 30).height
    assert n > 0
    return time.perf_counter() - start


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    data = frame(rows)
    dpq_round(data.head(1000))  # the first session's set-up, once
    times: dict[str, list[float]] = {"dpq load + COUNT": [], "polars filter + count": []}
    for _ in range(rounds):
        times["dpq load + COUNT"].append(dpq_round(data))
        times["polars filter + count"].append(polars_round(data))
    loaded = dpq.Session(practice=True)
    loaded.load(data, "people")
    loaded.run("SET BUDGET 1000;")
    times["dpq COUNT, loaded"] = []
    times["polars filter + count "] = []
    for r in range(rounds):
        times["dpq COUNT, loaded"].append(dpq_question(loaded, 30 + r))
        times["polars filter + count "].append(polars_question(data, 30 + r))
    medians = {k: statistics.median(v) for k, v in times.items()}
    print(f"{rows:,} rows, {rounds} rounds, median seconds:")
    for k, v in medians.items():
        print(f"  {k:<24} {v:8.4f}")
    first = medians["polars filter + count"] / medians["dpq load + COUNT"]
    then = medians["polars filter + count "] / medians["dpq COUNT, loaded"]
    print(f"  polars / dpq, load and a first COUNT {first:8.2f}")
    print(f"  polars / dpq, each COUNT after       {then:8.2f}")


if __name__ == "__main__":
    main()
