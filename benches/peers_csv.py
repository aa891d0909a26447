"""Side by side over one CSV: dpq (one or more builds) against Polars and DuckDB, interleaved
round by round, each the whole process (Python start-up included), 2 threads each.

Usage: python benches/peers_csv.py CSV ROUNDS QUESTION dpq[=LABEL] [dpq[=LABEL] ...]

QUESTION is `count` (LOAD + `COUNT WHERE age <= 30 AND sex = 'F'`, Polars `scan_csv(...).filter`,
DuckDB `count(*) ... WHERE`), `histogram` (LOAD + `CUBE BY sex ('F', 'M')` + `HISTOGRAM`,
Polars `scan_csv(...).group_by("sex").len()`, DuckDB `GROUP BY sex`) or `sum` (LOAD +
`SUM income CLAMP (0, 200000) WHERE age <= 30`, Polars `clip(...).sum()`, DuckDB
`sum(least(greatest(...)))`). Reports per tool the median,
least and greatest wall time and the median peak memory (`/usr/bin/time`), each peer's time over
each dpq's (median ratio and its least and greatest over rounds: above 1, dpq is faster), and the
machine's load average after every round. The CSV is made by `benches/peers_csv.sh`.
"""
import os, statistics, subprocess, sys, tempfile, time

csv, rounds, question = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dpqs = [tuple(a.split("=", 1)) if "=" in a else (a, a) for a in sys.argv[4:]]
py = sys.executable
if question == "count":
    dpq_q = f"LOAD '{csv}' AS t; COUNT WHERE age <= 30 AND sex = 'F' WITH EPS 0.1;"
    polars = ("import polars as pl, sys; print(pl.scan_csv(sys.argv[1]).filter((pl.col('age') <= 30)"
              " & (pl.col('sex') == 'F')).select(pl.len()).collect().item())")
    duck = ("SELECT count(*) FROM read_csv_auto('{}') WHERE age <= 30 AND sex = 'F'")
elif question == "histogram":
    dpq_q = f"LOAD '{csv}' AS t; CUBE BY sex ('F', 'M'); HISTOGRAM WITH EPS 0.1;"
    polars = ("import polars as pl, sys; print(pl.scan_csv(sys.argv[1]).group_by('sex').len()"
              ".collect().sort('sex'))")
    duck = "SELECT sex, count(*) FROM read_csv_auto('{}') GROUP BY sex ORDER BY sex"
elif question == "sum":
    dpq_q = f"LOAD '{csv}' AS t; SUM income CLAMP (0, 200000) WHERE age <= 30 WITH EPS 0.1;"
    polars = ("import polars as pl, sys; print(pl.scan_csv(sys.argv[1]).filter(pl.col('age') <= 30)"
              ".select(pl.col('income').clip(0, 200000).sum()).collect().item())")
    duck = ("SELECT sum(least(greatest(income, 0), 200000)) FROM read_csv_auto('{}') WHERE age <= 30")
else:
    sys.exit(f"unknown question {question!r}: count, histogram or sum")
duck_py = ("import duckdb, sys; c = duckdb.connect(); c.execute('SET threads=2'); "
           f"print(c.execute({duck!r}.format(sys.argv[1])).fetchall())")
tools = {f"dpq {label}": (lambda st, b=binary: [b, "--state-dir", st, "--format", "json", "-c", dpq_q])
         for binary, label in dpqs}
tools["polars"] = lambda st: ["env", "POLARS_MAX_THREADS=2", py, "-c", polars, csv]
tools["duckdb"] = lambda st: [py, "-c", duck_py, csv]

wall = {k: [] for k in tools}
rss = {k: [] for k in tools}
loads = []
subprocess.run(["cat", csv], stdout=subprocess.DEVNULL)  # into the page cache for every tool
for r in range(rounds):
    for k, mk in tools.items():
        st = tempfile.mkdtemp(prefix="dpq-peers-")
        tf = tempfile.mktemp()
        t = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf] + mk(st), capture_output=True, text=True)
        wall[k].append(time.perf_counter() - t)
        rss[k].append(int(open(tf).read().split()[-1]) / 1024)
        os.unlink(tf)
        subprocess.run(["rm", "-rf", st])
        if p.returncode:
            print("failed:", k, p.stderr[-300:], file=sys.stderr)
    loads.append(os.getloadavg()[0])
    print(f"round {r + 1}/{rounds}, load {os.getloadavg()}", flush=True)

rows = sum(1 for _ in open(csv, "rb")) - 1
print(f"\n{question}, {rows} rows, {os.path.getsize(csv) / 1e6:.0f} MB, {rounds} rounds, "
      f"load average (1 min) {min(loads):.2f}-{max(loads):.2f}")
print("| tool | median s | min s | max s | median peak MiB |")
print("|---|---|---|---|---|")
for k in tools:
    w = wall[k]
    print(f"| {k} | {statistics.median(w):.3f} | {min(w):.3f} | {max(w):.3f} | {statistics.median(rss[k]):.0f} |")
print("| peer / dpq | median ratio | min | max |")
print("|---|---|---|---|")
for _, label in dpqs:
    d = wall[f"dpq {label}"]
    for peer in ("polars", "duckdb"):
        ratios = [p / x for p, x in zip(wall[peer], d)]
        print(f"| {peer} / dpq {label} | {statistics.median(ratios):.2f} | {min(ratios):.2f} | {max(ratios):.2f} |")
