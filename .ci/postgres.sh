#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on loopback for dpq's tests, installing the
# distribution's packages when the machine has none, and prints the connection string for
# DPQ_TEST_POSTGRES. Usage: export DPQ_TEST_POSTGRES="$(bash .ci/postgres.sh)"
set -euo pipefail

port="${DPQ_PG_PORT:-54329}"
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

if ! as_owner "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
    rm -rf "$dir"
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_owner "$bin/initdb" -D "$dir" -U dpq --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null
fi
echo "host=127.0.0.1 port=$port user=dpq dbname=postgres"
