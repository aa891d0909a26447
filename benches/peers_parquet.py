"""Side by side: dpq against Polars and DuckDB on one Parquet file, the whole process timed.

Usage: python benches/peers_parquet.py ROWS ROUNDS DPQ [OLD_DPQ]   (see benches/peers_parquet.sh)

Writes `$BENCH_DIR/people-ROWS.parquet` once with DuckDB (1M-row groups: `COPY ... (ROW_GROUP_SIZE
1048576)`), columns id, age, sex, income, zip and region (a text of 12 values), then times,
interleaved round by round, each tool's whole process: dpq `LOAD` + `COUNT WHERE age <= 30`
(a fresh state directory each round) against Polars' `scan_parquet(...).filter(...)` and
DuckDB's `count(*)`, dpq's `HISTOGRAM BY region` against `group_by` / `GROUP BY`, and
`SUM income CLAMP (0, 200000) WHERE age <= 30` against `clip(...).sum()` / `sum(least(...))`. Two
threads each. A second dpq binary (`OLD_DPQ`, e.g. main's) is timed in the same rounds.
Prints the median, least and greatest wall time, the median peak memory (`/usr/bin/time`), the
ratio peer / dpq per round (median, least, greatest) and the machine's load.
"""
import os, shutil, statistics, subprocess, sys, tempfile, time

rows, rounds, dpq = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
old = sys.argv[4] if len(sys.argv) > 4 else None
py = sys.executable
bench = os.environ.get("BENCH_DIR", "/tmp/dpq-bench")
path = os.path.join(bench, f"people-{rows}.parquet")
REGIONS = ["North", "South", "East", "West", "Centre", "Coast", "Hills", "Lakes",
           "Plains", "Islands", "Valley", "Forest"]

if not os.path.exists(path):
    import duckdb
    c = duckdb.connect()
    c.execute("SET threads=2")
    regions = "[" + ", ".join(f"'{r}'" for r in REGIONS) + "]"
    c.execute(f"""COPY (SELECT i AS id,
        CAST(18 + (hash(i) % 73) AS INTEGER) AS age,
        CASE WHEN hash(i * 3) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
        CAST(hash(i * 7) % 200000 AS BIGINT) AS income,
        CAST(10000 + hash(i * 11) % 90000 AS INTEGER) AS zip,
        CASE WHEN hash(i * 13) % 50 = 0 THEN NULL
             ELSE list_extract({regions}, CAST(1 + hash(i * 17) % {len(REGIONS)} AS INTEGER)) END AS region
      FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 1048576)""")
    print(f"wrote {path}: {os.path.getsize(path) / 1e6:.0f} MB", flush=True)

count_q = "age <= 30"
polars_count = ("import polars as pl, sys; print(pl.scan_parquet(sys.argv[1])"
                ".filter(pl.col('age') <= 30).select(pl.len()).collect().item())")
polars_hist = ("import polars as pl, sys; print(pl.scan_parquet(sys.argv[1])"
               ".group_by('region').agg(pl.len()).collect().height)")
duck_count = ("import duckdb, sys; c = duckdb.connect(); c.execute('SET threads=2'); "
              "print(c.execute(\"SELECT count(*) FROM read_parquet('\" + sys.argv[1] + \"') WHERE age <= 30\").fetchone()[0])")
duck_hist = ("import duckdb, sys; c = duckdb.connect(); c.execute('SET threads=2'); "
             "print(len(c.execute(\"SELECT region, count(*) FROM read_parquet('\" + sys.argv[1] + \"') GROUP BY region\").fetchall()))")
polars_sum = ("import polars as pl, sys; print(pl.scan_parquet(sys.argv[1]).filter(pl.col('age') <= 30)"
              ".select(pl.col('income').clip(0, 200000).sum()).collect().item())")
duck_sum = ("import duckdb, sys; c = duckdb.connect(); c.execute('SET threads=2'); "
            "print(c.execute(\"SELECT sum(least(greatest(income, 0), 200000)) FROM read_parquet('\" + sys.argv[1] + \"') WHERE age <= 30\").fetchone()[0])")
sum_q = "SUM income CLAMP (0, 200000) WHERE age <= 30 WITH EPS 1;"
cube = "CUBE BY region (" + ", ".join(f"'{r}'" for r in REGIONS) + ");"


def dpq_cmd(binary, statements):
    return lambda st: [binary, "--state-dir", st, "--format", "json", "-c",
                       f"LOAD '{path}' AS t; {statements}"]


tools = {
    "dpq COUNT": dpq_cmd(dpq, f"COUNT WHERE {count_q} WITH EPS 1;"),
    "polars count": lambda st: ["env", "POLARS_MAX_THREADS=2", py, "-c", polars_count, path],
    "duckdb count": lambda st: [py, "-c", duck_count, path],
    "dpq HISTOGRAM": dpq_cmd(dpq, f"{cube} HISTOGRAM WITH EPS 1;"),
    "polars group_by": lambda st: ["env", "POLARS_MAX_THREADS=2", py, "-c", polars_hist, path],
    "duckdb GROUP BY": lambda st: [py, "-c", duck_hist, path],
    "dpq SUM": dpq_cmd(dpq, sum_q),
    "polars sum": lambda st: ["env", "POLARS_MAX_THREADS=2", py, "-c", polars_sum, path],
    "duckdb sum": lambda st: [py, "-c", duck_sum, path],
}
if old:
    tools["old dpq COUNT"] = dpq_cmd(old, f"COUNT WHERE {count_q} WITH EPS 1;")
    tools["old dpq HISTOGRAM"] = dpq_cmd(old, f"{cube} HISTOGRAM WITH EPS 1;")
    tools["old dpq SUM"] = dpq_cmd(old, sum_q)

wall = {k: [] for k in tools}
rss = {k: [] for k in tools}
loads = []
subprocess.run(["cat", path], stdout=subprocess.DEVNULL)
for r in range(rounds):
    for k, make in tools.items():
        st = tempfile.mkdtemp(prefix="dpq-bench-")
        tf = tempfile.mktemp()
        t = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf] + make(st),
                           capture_output=True, text=True)
        wall[k].append(time.perf_counter() - t)
        rss[k].append(int(open(tf).read().split()[-1]) / 1024)
        os.unlink(tf)
        shutil.rmtree(st, ignore_errors=True)
        if p.returncode:
            print("failed:", k, p.stderr[-400:], flush=True)
    loads.append(os.getloadavg()[0])
    print(f"round {r + 1}/{rounds}, load {os.getloadavg()}", flush=True)

print(f"\n{rows} rows, {os.path.getsize(path) / 1e6:.0f} MB, {rounds} rounds, "
      f"load (1 min) {min(loads):.2f}-{max(loads):.2f}")
print("| tool | median wall s | least-greatest | median peak MB |")
print("|---|---|---|---|")
for k in tools:
    w = wall[k]
    print(f"| {k} | {statistics.median(w):.3f} | {min(w):.3f}-{max(w):.3f} | {statistics.median(rss[k]):.0f} |")
pairs = [("polars count", "dpq COUNT"), ("duckdb count", "dpq COUNT"),
         ("polars group_by", "dpq HISTOGRAM"), ("duckdb GROUP BY", "dpq HISTOGRAM"),
         ("polars sum", "dpq SUM"), ("duckdb sum", "dpq SUM")]
if old:
    pairs += [("old dpq COUNT", "dpq COUNT"), ("old dpq HISTOGRAM", "dpq HISTOGRAM"),
              ("old dpq SUM", "dpq SUM")]
for peer, ours in pairs:
    ratios = [a / b for a, b in zip(wall[peer], wall[ours])]
    print(f"{peer} / {ours}: {statistics.median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}]")
