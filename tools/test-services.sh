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
