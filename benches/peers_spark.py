"""PySpark's own versions of the questions of benches/spark.rs, asked of the same Spark Connect
server in the same run, one at a time as the bench asks for them.

`cargo bench --features spark --bench spark` starts this script once with the server's address
(PySpark's Connect client in the venv `.ci/spark.sh` makes, /tmp/dpq-spark-venv) and drives it
over stdin and stdout, so that neither Python's start-up nor the connection is timed. It writes
one line when connected,

    ready <pid> <pyspark version>

and then, for each line `<question> <view>` it reads, asks Spark what a PySpark user would
write for it, times the call from the DataFrame's creation to the collected answer
(`time.perf_counter`), and writes one line of JSON: `{"seconds": s, "answer": a}`. The answer
(a count, a sum, or a histogram as `{value: count}`) lets the bench check that both sides
counted the same rows. The questions:

- `cells_by_cell`: `groupBy("cell").count()`, one row per value of the integer column;
- `cells_by_category`: `groupBy("category").count()`, one row per value of the text column;
- `count_age`: `filter(col("age") <= 30).count()`;
- `sum_amount`: `sum(least(greatest(amount, 100), 900))`, the clamped sum.

    python benches/peers_spark.py sc://127.0.0.1:25002
"""
import json
import os
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def cells(spark, view, column):
    rows = spark.table(view).groupBy(column).count().collect()
    return {str(r[column]): r["count"] for r in rows}


def count_age(spark, view):
    return spark.table(view).filter(F.col("age") <= 30).count()


def sum_amount(spark, view):
    clamped = F.least(F.greatest(F.col("amount"), F.lit(100)), F.lit(900))
    return spark.table(view).select(F.sum(clamped).alias("s")).collect()[0]["s"]


QUESTIONS = {
    "cells_by_cell": lambda spark, view: cells(spark, view, "cell"),
    "cells_by_category": lambda spark, view: cells(spark, view, "category"),
    "count_age": count_age,
    "sum_amount": sum_amount,
}


def main():
    import pyspark

    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    print(f"ready {os.getpid()} {pyspark.__version__}", flush=True)
    for line in sys.stdin:
        question, view = line.split()
        start = time.perf_counter()
        answer = QUESTIONS[question](spark, view)
        seconds = time.perf_counter() - start
        print(json.dumps({"seconds": seconds, "answer": answer}), flush=True)


main()
