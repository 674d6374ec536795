#!/usr/bin/env bash
# RabbitMQ policies every nova-cacheaware deployment needs, on the bus the
# agents publish their live state to (the schedulers' notification bus).
#
#   deploy/rabbitmq/cacheaware-policies.sh [-p VHOST] [--topic TOPIC]
#       [--pool-prefix PREFIX] [--status-prefix PREFIX] [--max-length N]
#       [--expires-ms MS] [--relay-pool POOL] [--relay-ttl-ms MS]
#
# 1. cacheaware-state-default-queue: oslo.messaging's sender declares a
#    queue named after the topic, TOPIC.info, which no scheduler reads (each
#    worker reads its own pool queue). Without a limit it keeps every state
#    and heartbeat of the region: about 200 messages a second at 10 000
#    hosts. The policy keeps the newest N (default 1000).
# 2. cacheaware-scheduler-queues: a stopped scheduler worker's queue
#    (PREFIX-<host>-<pid>) is not deleted by RabbitMQ on its own; the policy
#    expires queues unused for MS milliseconds (default 10 minutes).
# 3. cacheaware-status-queues: the same for a stopped nova-cacheaware-api
#    process's queue (its listener: STATUS-PREFIX-<host>-<pid>).
# 4. cacheaware-relay-want-queues: the same for a stopped state relay's
#    queue of schedulers' wants (POOL-want-<host>-<pid>, on the API bus).
# 5. cacheaware-relay-queue: the queue the state relays of a cell share
#    (POOL, on the cell's bus) drops messages older than MS (default 60 s)
#    while no relay reads it: a relay that comes back must not take a
#    backlog of old heartbeats for hosts heard now. Lost states are
#    repaired (the schedulers ask for them, doc/source/admin/live-state.rst).
#
# Run it on the API bus and on every cell's bus that has relays.
#
# Defaults match [cacheaware_scheduler] host_state_topic and
# host_state_pool_prefix, [cacheaware_status] listener_pool_prefix and
# [state_relay] pool. Idempotent (set_policy replaces a policy of the
# same name). Needs rabbitmqctl (run it on a RabbitMQ node).
set -euo pipefail

vhost=/
topic=cacheaware_host_state
prefix=cacheaware-scheduler
status_prefix=cacheaware-status
max_length=1000
expires_ms=600000
relay_pool=cacheaware-state-relay
relay_ttl_ms=60000
while [ $# -gt 0 ]; do
    case "$1" in
        -p) vhost=$2; shift 2 ;;
        --topic) topic=$2; shift 2 ;;
        --pool-prefix) prefix=$2; shift 2 ;;
        --status-prefix) status_prefix=$2; shift 2 ;;
        --max-length) max_length=$2; shift 2 ;;
        --expires-ms) expires_ms=$2; shift 2 ;;
        --relay-pool) relay_pool=$2; shift 2 ;;
        --relay-ttl-ms) relay_ttl_ms=$2; shift 2 ;;
        *) echo "cacheaware-policies: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$max_length$expires_ms$relay_ttl_ms" in *[!0-9]*)
    echo "cacheaware-policies: --max-length, --expires-ms and --relay-ttl-ms take whole numbers" >&2
    exit 2 ;;
esac

# Regular expressions of the exact names: dots and dashes escaped.
# shellcheck disable=SC2016  # the sed expression is literal
escape() { printf '%s' "$1" | sed 's/[.[\*^$()+?{|-]/\\&/g'; }
rabbitmqctl -q set_policy -p "$vhost" --apply-to queues \
    cacheaware-state-default-queue "^$(escape "$topic")\\.info\$" \
    "{\"max-length\": $max_length}"
rabbitmqctl -q set_policy -p "$vhost" --apply-to queues \
    cacheaware-scheduler-queues "^$(escape "$prefix")-" \
    "{\"expires\": $expires_ms}"
rabbitmqctl -q set_policy -p "$vhost" --apply-to queues \
    cacheaware-status-queues "^$(escape "$status_prefix")-" \
    "{\"expires\": $expires_ms}"
rabbitmqctl -q set_policy -p "$vhost" --apply-to queues \
    cacheaware-relay-want-queues "^$(escape "$relay_pool")-want-" \
    "{\"expires\": $expires_ms}"
rabbitmqctl -q set_policy -p "$vhost" --apply-to queues \
    cacheaware-relay-queue "^$(escape "$relay_pool")\$" \
    "{\"message-ttl\": $relay_ttl_ms}"
echo "cacheaware-policies: set on vhost $vhost (topic $topic, pool prefix $prefix)"
