#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on loopback for dpq's tests, installing the
# distribution's packages when the machine has none, and prints the connection string for
# DPQ_TEST_POSTGRES. Usage: export DPQ_TEST_POSTGRES="$(bash .ci/postgres.sh)"
set -euo pipefail

# Ports below 32768, outside Linux's range for outgoing connections (32768-60999): a test
# suite that opens thousands of loopback connections could otherwise hold the port a server
# is about to listen on.
port="${DPQ_PG_PORT:-25432}"
dir="${DPQ_PG_DIR:-/tmp/dpq-postgres}"

bin=""
for candidate in /usr/lib/postgresql/*/bin; do
    [ -x "$candidate/initdb" ] && bin="$candidate"
done
if [ -z "$bin" ]; then
    echo "installing PostgreSQL from the distribution's packages" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    for candidate in /usr/lib/postgresql/*/bin; do
        [ -x "$candidate/initdb" ] && bin="$candidate"
    done
fi
[ -n "$bin" ] || { echo "no PostgreSQL server binaries found" >&2; exit 1; }

# The server refuses to run as root: run it as the packages' postgres user when we are root.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# One start at a time per directory: two test processes asking for the same server at once
# would otherwise both find it stopped and both create it. (The server must not inherit the
# lock: it is started with the descriptor closed.)
exec 9>"$dir.lock"
flock 9

if ! as_owner "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
    rm -rf "$dir"
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_owner "$bin/initdb" -D "$dir" -U dpq --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    if ! as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null 9>&-; then
        echo "the PostgreSQL server on port $port did not start; its log:" >&2
        tail -n 20 "$dir/server.log" >&2 || true
        exit 1
    fi
fi
echo "host=127.0.0.1 port=$port user=dpq dbname=postgres"
