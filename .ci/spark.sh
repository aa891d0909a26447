#!/usr/bin/env bash
# Starts a throwaway Spark Connect server on loopback for dpq's tests and prints its address
# for DPQ_TEST_SPARK. What it runs comes from the package registries: PyPI's pyspark (the
# server's jars, and PySpark's own client for the benchmark's side of the comparison), in a
# virtual environment of its own, and Debian's Java runtime when the machine has none.
#
#   export DPQ_TEST_SPARK="$(bash .ci/spark.sh)"     # start (or find running), print sc://...
#   bash .ci/spark.sh stop                            # stop it
#
# The server runs with --master local[2] and keeps its tables under $DPQ_SPARK_DIR.
set -euo pipefail

# A port below 32768, outside Linux's range for outgoing connections.
port="${DPQ_SPARK_PORT:-25002}"
dir="${DPQ_SPARK_DIR:-/tmp/dpq-spark}"
venv="${DPQ_SPARK_VENV:-/tmp/dpq-spark-venv}"
version="4.1.1"

if [ "${1:-}" = stop ]; then
    if [ -f "$dir/server.pid" ]; then
        kill "$(cat "$dir/server.pid")" 2>/dev/null || true
        rm -f "$dir/server.pid"
    fi
    exit 0
fi

if ! command -v java >/dev/null 2>&1; then
    echo "installing a Java runtime from the distribution's packages" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq openjdk-17-jre-headless >&2
fi
if ! "$venv/bin/python" -c "import pyspark, sys; sys.exit(pyspark.__version__ != '$version')" 2>/dev/null; then
    echo "installing pyspark $version from PyPI into $venv" >&2
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "pyspark[connect]==$version" >&2
fi
home="$("$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"

# One start at a time: two test processes asking for the server at once would both start it.
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9

ready() {
    "$venv/bin/python" - "$port" <<'EOF' >/dev/null 2>&1
import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
EOF
}

if ! ready; then
    : > "$dir/server.log"
    # The server must not inherit the lock: it is started with the descriptor closed.
    (
        cd "$dir"
        SPARK_HOME="$home" setsid "$home/bin/spark-submit" \
            --class org.apache.spark.sql.connect.service.SparkConnectServer \
            --master 'local[2]' \
            --driver-memory "${DPQ_SPARK_MEMORY:-2g}" \
            --conf spark.connect.grpc.binding.address=127.0.0.1 \
            --conf spark.connect.grpc.binding.port="$port" \
            --conf spark.ui.enabled=false \
            --conf spark.log.level=WARN \
            --conf spark.sql.warehouse.dir="$dir/warehouse" \
            --conf "spark.driver.extraJavaOptions=-Dderby.system.home=$dir" \
            spark-internal >"$dir/server.log" 2>&1 9>&- &
        echo $! > "$dir/server.pid"
    )
    for _ in $(seq 1 240); do
        ready && break
        if ! kill -0 "$(cat "$dir/server.pid")" 2>/dev/null; then
            echo "the Spark Connect server did not start; its log:" >&2
            tail -n 30 "$dir/server.log" >&2
            exit 1
        fi
        sleep 0.5
    done
    ready || { echo "the Spark Connect server did not answer in 120 s" >&2; exit 1; }
fi
echo "sc://127.0.0.1:$port"
