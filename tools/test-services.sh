#!/usr/bin/env bash
# start|stop the local services the functional tests need, ending only what
# this script started. Currently: nothing beyond the machine's own
# MariaDB/RabbitMQ; later suites add libvirtd here.
set -uo pipefail
cd "$(dirname "$0")/.."
state=.stestr/services-started
mkdir -p .stestr
case "${1:-}" in
start)
    : > "$state"
    # MariaDB: the real Placement of tests/functional/test_provider_sync.py
    # runs on it. The machine normally runs it already; start it if down.
    if ! mysqladmin --connect-timeout=2 ping >/dev/null 2>&1 \
            && [ -x /usr/sbin/mariadbd ]; then
        mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
        /usr/sbin/mariadbd --user=mysql >/dev/null 2>&1 &
        echo $! >> "$state"
        for _ in $(seq 1 100); do
            mysqladmin ping >/dev/null 2>&1 && break; sleep 0.2
        done
    fi
    ;;
stop)
    if [ -f "$state" ]; then
        while read -r pid; do
            [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
        done < "$state"
        rm -f "$state"
    fi
    ;;
*)
    echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
