#!/usr/bin/env bash
# The devcloud: a real, small OpenStack on loopback for the demo and tempest.
#
#   tools/devcloud.sh up       install (first time), configure, start; idempotent
#   tools/devcloud.sh status   what runs, where, with which filters/weighers
#   tools/devcloud.sh down     end the processes it started, drop its databases
#   tools/devcloud.sh down --purge   ... and remove .devcloud (venv, image)
#   tools/devcloud.sh backends the MariaDB databases and RabbitMQ vhost only
#
# Keystone, Placement, the Nova API (stdlib WSGI server each), nova-conductor,
# nova-scheduler, one libvirt nova-compute on QEMU TCG (its own libvirtd in a
# private mount namespace) with nova-cacheaware-agent next to it, a second
# one for live migration (DEVCLOUD_LIBVIRT_COMPUTES), and two
# fake-driver computes with NUMA topologies, real Glance (file store) and a
# network stub, and with DEVCLOUD_WATCHER=1 OpenStack Watcher (API,
# decision engine, applier) with nova-cacheaware's strategy. Uses this
# machine's MariaDB and RabbitMQ. See doc/source/contributor/devcloud.rst.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
TOOLS=$ROOT/tools/devcloud
WSGI_SERVE=("$ROOT/tools/wsgi_serve.py" --access-log)
DC=${DEVCLOUD_DIR:-$ROOT/.devcloud}
VENV=$DC/venv
PY=$VENV/bin/python
RUN=$DC/run
LOGS=$DC/logs

KEYSTONE_PORT=${DEVCLOUD_KEYSTONE_PORT:-15000}
PLACEMENT_PORT=${DEVCLOUD_PLACEMENT_PORT:-15778}
NOVA_PORT=${DEVCLOUD_NOVA_PORT:-15774}
IMAGE_PORT=${DEVCLOUD_IMAGE_PORT:-15292}
NETWORK_PORT=${DEVCLOUD_NETWORK_PORT:-15696}
# nova-cacheaware-api (openstack cacheaware ...), catalog type cache-aware.
CACHEAWARE_API_PORT=${DEVCLOUD_CACHEAWARE_API_PORT:-15797}
# watcher-api (openstack optimize ...), catalog type infra-optim.
WATCHER_PORT=${DEVCLOUD_WATCHER_PORT:-15322}
DB_HOST=${DEVCLOUD_DB_HOST:-127.0.0.1}
DB_USER=${DEVCLOUD_DB_USER:-root}
DB_PREFIX=${DEVCLOUD_DB_PREFIX:-cacheaware_devcloud_}
DB_MIN_CONNECTIONS=${DEVCLOUD_DB_MIN_CONNECTIONS:-500}
# watcher: created (empty) and dropped whether Watcher runs or not, so
# that "down" drops it whatever DEVCLOUD_WATCHER says then.
DATABASES="keystone placement nova_api nova nova_cell0 glance watcher"
RABBIT_VHOST=${DEVCLOUD_RABBIT_VHOST:-cacheaware_devcloud}
# Our scheduler plugins; a path that does not import is left out (status says).
AVAILABLE_FILTERS=${DEVCLOUD_AVAILABLE_FILTERS:-nova_cacheaware.scheduler.filters.all_filters}
ENABLED_FILTERS=${DEVCLOUD_ENABLED_FILTERS:-CacheDomainFilter,FullNUMAFilter}
WEIGHERS=${DEVCLOUD_WEIGHERS:-nova_cacheaware.scheduler.weights.all_weighers}
# DEVCLOUD_DEBUG=1 turns on debug logging in every service (at the next up).
# DEVCLOUD_LIBVIRT=0 leaves out the libvirt compute (no root / no libvirtd).
WITH_LIBVIRT=${DEVCLOUD_LIBVIRT:-1}
# DEVCLOUD_LIBVIRT_COMPUTES=2 (the default) adds devcloud-libvirt2, a second
# libvirt compute with its own private libvirtd and agent, so that guests
# can live-migrate between the two; 1 leaves it out.
LIBVIRT_COMPUTES=${DEVCLOUD_LIBVIRT_COMPUTES:-2}
[ "$WITH_LIBVIRT" = 1 ] || LIBVIRT_COMPUTES=0
# DEVCLOUD_GLANCE=1 (the default): real Glance (glance-api from the package
# registry, file store, MariaDB) on the image port with the three guest
# images uploaded at up; 0: the read-only image stub instead. Switching an
# up cloud from one to the other needs a down first.
WITH_GLANCE=${DEVCLOUD_GLANCE:-1}
if [ "$WITH_GLANCE" = 1 ]; then IMAGE_SVC=glance; else IMAGE_SVC=image; fi
# DEVCLOUD_WATCHER=1: OpenStack Watcher 17 from the package registry
# (requirements-watcher.txt): watcher-api on WATCHER_PORT, the decision
# engine with nova-cacheaware's goal, strategy and planner, the applier.
# 0 (the default here; devcloud-tempest.sh sets 1): none.
WITH_WATCHER=${DEVCLOUD_WATCHER:-0}
WATCHER_SERVICES="watcher-decision-engine watcher-applier watcher-api"
case "$LIBVIRT_COMPUTES" in 0|1|2) ;; *)
    echo "devcloud: DEVCLOUD_LIBVIRT_COMPUTES must be 1 or 2" >&2; exit 2 ;;
esac
# Libvirt compute N (1, 2): its name suffix, host, libvirtd directory, URI.
lv_sfx() { [ "$1" = 1 ] || echo "$1"; }
lv_host() { echo "devcloud-libvirt$(lv_sfx "$1")"; }
lv_dir() { echo "$DC/libvirt$(lv_sfx "$1")"; }
lv_uri() { echo "qemu+unix:///system?socket=$(lv_dir "$1")/sock/libvirt-sock"; }
LIBVIRT_DIR=$(lv_dir 1)
# instances_path of every libvirt compute: in each one's mount namespace
# its own $DC/nova/<host>/instances is mounted there (libvirt_ns.sh).
LIBVIRT_INSTANCES=$DC/nova/libvirt-instances
LIBVIRT_URI=$(lv_uri 1)
# Fake-driver computes: one per name; the topology is the name without a
# trailing "-plain" and/or "-NN" (fake-zen-03 -> topologies/fake-zen.json);
# "-plain" hosts get no cache-domain providers (a host not opted in).
FAKE_COMPUTES=${DEVCLOUD_FAKE_COMPUTES:-"fake-zen fake-ecluster"}
# DEVCLOUD_FAKE_AGENTS=1 runs the real agent code for every fake compute
# that opted in (tools/devcloud/fake_agents.py: libvirt test:/// domains
# mirror Nova's servers), in DEVCLOUD_FAKE_AGENTS_MODEL (host, default, or
# domain); 0 (default): the fake computes have no agent.
FAKE_AGENTS=${DEVCLOUD_FAKE_AGENTS:-0}
FAKE_AGENTS_MODEL=${DEVCLOUD_FAKE_AGENTS_MODEL:-host}

log() { printf 'devcloud: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

topology_of() {  # fake compute name -> topology file name
    local t=${1%-[0-9]*}
    echo "${t%-plain}"
}

mysql_q() { timeout 60 mysql -h "$DB_HOST" -u "$DB_USER" -N -B -e "$1"; }

computes_json() {
    local out="[" sep="" i
    for i in $(seq "$LIBVIRT_COMPUTES"); do
        out+="$sep{\"name\": \"$(lv_host "$i")\", \"driver\": \"libvirt\", \"index\": $i, \"libvirt_uri\": \"$(lv_uri "$i")\"}"
        sep=", "
    done
    for t in $FAKE_COMPUTES; do
        out+="$sep{\"name\": \"devcloud-$t\", \"driver\": \"fake\", \"topology\": \"$(topology_of "$t")\"}"
        sep=", "
    done
    echo "$out]"
}

export_env() {
    # shellcheck disable=SC1091
    . "$DC/secrets.env"
    export DEVCLOUD_DIR=$DC DEVCLOUD_VENV=$VENV DEVCLOUD_TOOLS=$TOOLS \
        DEVCLOUD_KEYSTONE_PORT=$KEYSTONE_PORT \
        DEVCLOUD_PLACEMENT_PORT=$PLACEMENT_PORT \
        DEVCLOUD_NOVA_PORT=$NOVA_PORT DEVCLOUD_IMAGE_PORT=$IMAGE_PORT \
        DEVCLOUD_NETWORK_PORT=$NETWORK_PORT DEVCLOUD_GLANCE=$WITH_GLANCE \
        DEVCLOUD_CACHEAWARE_API_PORT=$CACHEAWARE_API_PORT \
        DEVCLOUD_WATCHER=$WITH_WATCHER DEVCLOUD_WATCHER_PORT=$WATCHER_PORT \
        DEVCLOUD_DB_URL="mysql+pymysql://$DB_USER@$DB_HOST" \
        DEVCLOUD_DB_PREFIX=$DB_PREFIX \
        DEVCLOUD_TRANSPORT_URL="rabbit://guest:guest@127.0.0.1:5672/$RABBIT_VHOST" \
        DEVCLOUD_ADMIN_PASSWORD DEVCLOUD_SERVICE_PASSWORD \
        DEVCLOUD_LIBVIRT_URI=$LIBVIRT_URI \
        DEVCLOUD_AVAILABLE_FILTERS=$AVAILABLE_FILTERS \
        DEVCLOUD_ENABLED_FILTERS=$ENABLED_FILTERS \
        DEVCLOUD_WEIGHERS=$WEIGHERS \
        DEVCLOUD_COMPUTES
    DEVCLOUD_COMPUTES=$(computes_json)
    export OS_CLIENT_CONFIG_FILE=$DC/clouds.yaml
}

# --- processes: one PID file per service, each its own process group -------
alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

start_svc() {  # name command...
    local name=$1; shift
    if alive "$name"; then return 0; fi
    setsid "$@" >> "$LOGS/$name.log" 2>&1 < /dev/null &
    echo $! > "$RUN/$name.pid"
}

stop_many() {  # names...: TERM each process group, KILL what is left after 15 s
    local name pid pids=()
    for name in "$@"; do
        [ -f "$RUN/$name.pid" ] || continue
        pid=$(cat "$RUN/$name.pid")
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
            pids+=("$pid")
        fi
        rm -f "$RUN/$name.pid"
    done
    for _ in $(seq 150); do
        local left=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
        [ $left = 0 ] && return 0
        sleep 0.1
    done
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
}

wait_http() {  # name url [seconds]
    for _ in $(seq $((${3:-90} * 5))); do
        curl -s -m 5 -o /dev/null "$2" && return 0
        if ! alive "$1"; then
            tail -n 30 "$LOGS/$1.log" >&2; die "$1 exited (log: $LOGS/$1.log)"
        fi
        sleep 0.2
    done
    tail -n 30 "$LOGS/$1.log" >&2
    die "$1 did not answer on $2 (log: $LOGS/$1.log)"
}

port_free_or_ours() {  # service port variable
    if curl -s -m 5 -o /dev/null "http://127.0.0.1:$2/" && ! alive "$1"; then
        die "port $2 (for $1) is taken by a process the devcloud did not start; set $3"
    fi
}

# --- install ---------------------------------------------------------------
ensure_venv() {
    local want reqs=(-r "$TOOLS/requirements.txt")
    # Watcher only when asked; a venv that has it keeps it without.
    [ "$WITH_WATCHER" = 1 ] && reqs+=(-r "$TOOLS/requirements-watcher.txt")
    want=$(cat "$TOOLS/requirements.txt" setup.cfg requirements.txt | sha256sum | cut -d' ' -f1)
    [ "$WITH_WATCHER" = 1 ] && want="$want+$(sha256sum < "$TOOLS/requirements-watcher.txt" | cut -d' ' -f1)"
    if [ -f "$VENV/.stamp" ] && [ "$(cat "$VENV/.stamp")" = "$want" ]; then return 0; fi
    # A stamp with Watcher covers a run without it.
    if [ "$WITH_WATCHER" != 1 ] && [ -f "$VENV/.stamp" ] \
            && [ "$(cut -d+ -f1 "$VENV/.stamp")" = "$want" ]; then return 0; fi
    log "installing the devcloud venv ($VENV, a few minutes the first time)"
    [ -x "$PY" ] || python3 -m venv "$VENV" || die "python3 -m venv failed"
    # pip's output (index warnings included) goes to a log, not the screen.
    timeout 1800 "$VENV/bin/pip" install -q "${reqs[@]}" \
        >> "$LOGS/pip-install.log" 2>&1 || die "pip install failed ($LOGS/pip-install.log)"
    timeout 600 "$VENV/bin/pip" install -q --no-deps -e . \
        >> "$LOGS/pip-install.log" 2>&1 || die "pip install -e . failed ($LOGS/pip-install.log)"
    echo "$want" > "$VENV/.stamp"
}

ensure_secrets() {
    [ -f "$DC/secrets.env" ] && return 0
    umask 077
    {
        echo "DEVCLOUD_ADMIN_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
        echo "DEVCLOUD_SERVICE_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
    } > "$DC/secrets.env"
    umask 022
}

ensure_backends() {
    mysql_q "SELECT 1" >/dev/null 2>&1 || die "MariaDB at $DB_HOST:3306 ($DB_USER, no password) is not reachable"
    local db
    # A fresh devcloud directory over databases an earlier devcloud left
    # behind (its directory removed without "down"): nova-compute refuses
    # to start on a host the database already knows ("No local node
    # identity found, but this is not our first startup"). Start clean.
    if [ ! -f "$DC/nova/.db-synced" ] && [ ! -f "$DC/keystone/.bootstrapped" ] \
            && [ -n "$(mysql_q "SHOW DATABASES LIKE '${DB_PREFIX//_/\\_}%'")" ]; then
        log "dropping databases ${DB_PREFIX}* and vhost $RABBIT_VHOST left by an earlier devcloud (its directory is gone)"
        for db in $DATABASES; do mysql_q "DROP DATABASE IF EXISTS \`$DB_PREFIX$db\`"; done
        timeout 60 rabbitmqctl -q delete_vhost "$RABBIT_VHOST" >/dev/null 2>&1 || true
    fi
    for db in $DATABASES; do
        mysql_q "CREATE DATABASE IF NOT EXISTS \`$DB_PREFIX$db\` CHARACTER SET utf8" || die "cannot create database $DB_PREFIX$db"
    done
    # Every service process keeps an oslo.db pool per database (up to 5 +
    # 50 overflow); a burst on 24 computes with two scheduler workers took
    # more than MariaDB's default 151 and a request was never scheduled.
    local conns
    conns=$(mysql_q "SELECT @@GLOBAL.max_connections")
    if [ "${conns:-0}" -lt "$DB_MIN_CONNECTIONS" ]; then
        log "raising MariaDB max_connections from $conns to $DB_MIN_CONNECTIONS (until it restarts)"
        mysql_q "SET GLOBAL max_connections = $DB_MIN_CONNECTIONS" \
            || die "cannot raise MariaDB max_connections to $DB_MIN_CONNECTIONS (DEVCLOUD_DB_MIN_CONNECTIONS=0 skips it)"
    fi
    if ! timeout 60 rabbitmqctl -q list_vhosts 2>/dev/null | grep -qx "$RABBIT_VHOST"; then
        timeout 60 rabbitmqctl -q add_vhost "$RABBIT_VHOST" >/dev/null \
            || die "cannot create RabbitMQ vhost $RABBIT_VHOST (rabbitmqctl)"
        timeout 60 rabbitmqctl -q set_permissions -p "$RABBIT_VHOST" guest '.*' '.*' '.*' >/dev/null
    fi
    # What every deployment needs (deploy/rabbitmq/): the default state
    # queue nobody reads stays small, stopped workers' queues expire.
    timeout 120 bash "$ROOT/deploy/rabbitmq/cacheaware-policies.sh" -p "$RABBIT_VHOST" \
        >> "$LOGS/rabbitmq.log" 2>&1 || die "cannot set the RabbitMQ policies ($LOGS/rabbitmq.log)"
}

# --- services ---------------------------------------------------------------
keystone_up() {
    local conf=$DC/etc/keystone/keystone.conf km
    km="timeout 600 $VENV/bin/keystone-manage --config-file $conf"
    mkdir -p "$DC/keystone"
    if [ ! -f "$DC/keystone/.bootstrapped" ]; then
        $km db_sync >> "$LOGS/keystone-manage.log" 2>&1 || die "keystone db_sync failed ($LOGS/keystone-manage.log)"
        $km fernet_setup --keystone-user root --keystone-group root >> "$LOGS/keystone-manage.log" 2>&1
        $km credential_setup --keystone-user root --keystone-group root >> "$LOGS/keystone-manage.log" 2>&1
        $km bootstrap --bootstrap-password "$DEVCLOUD_ADMIN_PASSWORD" \
            --bootstrap-region-id RegionOne \
            --bootstrap-public-url "http://127.0.0.1:$KEYSTONE_PORT/v3" \
            --bootstrap-internal-url "http://127.0.0.1:$KEYSTONE_PORT/v3" \
            --bootstrap-admin-url "http://127.0.0.1:$KEYSTONE_PORT/v3" \
            >> "$LOGS/keystone-manage.log" 2>&1 || die "keystone bootstrap failed ($LOGS/keystone-manage.log)"
        touch "$DC/keystone/.bootstrapped"
    fi
    OS_KEYSTONE_CONFIG_FILES=$conf start_svc keystone \
        "$PY" "${WSGI_SERVE[@]}" keystone.wsgi.api "$KEYSTONE_PORT"
}

nova_db() {
    local nm="timeout 600 $VENV/bin/nova-manage --config-file $DC/etc/nova/nova.conf"
    [ -f "$DC/nova/.db-synced" ] && return 0
    $nm api_db sync >> "$LOGS/nova-manage.log" 2>&1 || die "nova-manage api_db sync failed ($LOGS/nova-manage.log)"
    $nm cell_v2 list_cells 2>/dev/null | grep -q ' cell0 ' \
        || $nm cell_v2 map_cell0 --database_connection \
            "$DEVCLOUD_DB_URL/${DB_PREFIX}nova_cell0?charset=utf8" >> "$LOGS/nova-manage.log" 2>&1
    $nm cell_v2 list_cells 2>/dev/null | grep -q ' cell1 ' \
        || $nm cell_v2 create_cell --name cell1 >> "$LOGS/nova-manage.log" 2>&1
    $nm db sync >> "$LOGS/nova-manage.log" 2>&1 || die "nova-manage db sync failed ($LOGS/nova-manage.log)"
    touch "$DC/nova/.db-synced"
}

# Real Glance: its database, stores, the API on the image port, and the
# three guest images (glance_images.py; kept across ups, like the rest).
glance_up() {
    [ "$WITH_GLANCE" = 1 ] || return 0
    local t0=$SECONDS
    mkdir -p "$DC/glance/images" "$DC/glance/staging" "$DC/glance/tasks" "$DC/glance/lock"
    if [ ! -f "$DC/glance/.db-synced" ]; then
        timeout 600 "$VENV/bin/glance-manage" --config-file "$DC/etc/glance/glance-api.conf" db_sync \
            >> "$LOGS/glance-manage.log" 2>&1 || die "glance-manage db_sync failed ($LOGS/glance-manage.log)"
        touch "$DC/glance/.db-synced"
    fi
    OS_GLANCE_CONFIG_DIR=$DC/etc/glance start_svc glance \
        "$PY" "${WSGI_SERVE[@]}" glance.wsgi.api "$IMAGE_PORT"
    wait_http glance "http://127.0.0.1:$IMAGE_PORT/"
    timeout 600 "$PY" "$TOOLS/glance_images.py" "$DC/image" >> "$LOGS/glance-images.log" 2>&1 \
        || { tail -n 20 "$LOGS/glance-images.log" >&2; die "uploading the guest images into Glance failed"; }
    log "glance up with the guest images in $((SECONDS - t0)) s"
}

# OpenStack Watcher: its database, the API on WATCHER_PORT, the decision
# engine (which loads nova-cacheaware's goal, strategy and planner and
# records them in the database at start) and the applier.
watcher_up() {
    [ "$WITH_WATCHER" = 1 ] || return 0
    local conf=$DC/etc/watcher/watcher.conf t0=$SECONDS
    mkdir -p "$DC/watcher/lock"
    if [ ! -f "$DC/watcher/.db-synced" ]; then
        timeout 600 "$VENV/bin/watcher-db-manage" --config-file "$conf" upgrade \
            >> "$LOGS/watcher-db-manage.log" 2>&1 || die "watcher-db-manage upgrade failed ($LOGS/watcher-db-manage.log)"
        touch "$DC/watcher/.db-synced"
    fi
    start_svc watcher-api "$PY" "${WSGI_SERVE[@]}" --config-file "$conf" \
        watcher.wsgi.api "$WATCHER_PORT"
    start_svc watcher-decision-engine "$VENV/bin/watcher-decision-engine" --config-file "$conf"
    start_svc watcher-applier "$VENV/bin/watcher-applier" --config-file "$conf"
    wait_http watcher-api "http://127.0.0.1:$WATCHER_PORT/"
    # The goal is in the database once the decision engine has loaded
    # the plugin: what "openstack optimize goal list" and audits need.
    local _
    for _ in $(seq 300); do
        [ -n "$(mysql_q "SELECT name FROM \`${DB_PREFIX}watcher\`.goals WHERE name = 'cache_isolation' AND deleted = 0" 2>/dev/null)" ] && break
        alive watcher-decision-engine || break
        sleep 0.2
    done
    local name
    for name in $WATCHER_SERVICES; do
        alive "$name" || { tail -n 30 "$LOGS/$name.log" >&2; die "$name exited (log: $LOGS/$name.log)"; }
    done
    [ -n "$(mysql_q "SELECT name FROM \`${DB_PREFIX}watcher\`.goals WHERE name = 'cache_isolation' AND deleted = 0" 2>/dev/null)" ] \
        || die "watcher-decision-engine did not record the cache_isolation goal in 60 s ($LOGS/watcher-decision-engine.log)"
    local one two
    one=$(libvirt_node_id devcloud-libvirt); two=$(libvirt_node_id devcloud-libvirt2)
    if [ -n "$one" ] && [ -n "$two" ] && [ "$one" -gt "$two" ]; then
        log "WARNING: devcloud-libvirt2 registered before devcloud-libvirt (a cloud of an older devcloud.sh):"
        log "  Watcher's compute model then lacks devcloud-libvirt; run down, then up"
    fi
    log "watcher up with goal cache_isolation in $((SECONDS - t0)) s"
}

libvirt_up() {
    local i
    [ "$WITH_LIBVIRT" = 1 ] || return 0
    [ "$(id -u)" = 0 ] || die "the libvirt compute needs root (or DEVCLOUD_LIBVIRT=0)"
    command -v libvirtd >/dev/null || die "libvirtd is not installed (bash tools/setup.sh) or DEVCLOUD_LIBVIRT=0"
    for i in $(seq "$LIBVIRT_COMPUTES"); do one_libvirtd_up "$i"; done
}

# Libvirt compute N's virtlogd + libvirtd (libvirt_ns.sh), with
# nova-cacheaware's qemu hook installed in its private hooks directory the
# way an operator installs it ("nova-cacheaware install-hook"), so that
# live migrations of agent-pinned guests between the two go through it.
one_libvirtd_up() {
    local i=$1 sfx dir uri ns=(-m)
    sfx=$(lv_sfx "$1"); dir=$(lv_dir "$1"); uri=$(lv_uri "$1")
    if alive "libvirtd$sfx"; then return 0; fi
    mkdir -p "$dir/hooks"
    rm -f "$dir/libvirtd.pid" "$dir/virtlogd.pid"
    timeout 60 "$VENV/bin/nova-cacheaware" install-hook --hooks-dir "$dir/hooks" \
        --pin-record-dir "$DC/pins/$(lv_host "$i")" \
        >> "$LOGS/install-hook.log" 2>&1 || die "nova-cacheaware install-hook failed ($LOGS/install-hook.log)"
    # Each daemon in its own UTS namespace with the compute's name: libvirt
    # reports it as the host name, which Nova makes the compute node's
    # (hypervisor and Placement provider) name, so they match the service
    # host the demo and the docs show, not this machine's name.
    local args=("$dir" "$(lv_host "$i")")
    ns+=(-u)
    INSTANCES=$DC/nova/$(lv_host "$i")/instances INSTANCES_PATH=$LIBVIRT_INSTANCES \
        unshare "${ns[@]}" --propagation private bash "$TOOLS/libvirt_ns.sh" "${args[@]}" \
        >> "$LOGS/libvirtd$sfx.log" 2>&1 || die "private libvirtd failed ($LOGS/libvirtd$sfx.log)"
    local _
    for _ in $(seq 100); do
        [ -S "$dir/sock/libvirt-sock" ] && [ -s "$dir/libvirtd.pid" ] && break
        sleep 0.1
    done
    cp "$dir/libvirtd.pid" "$RUN/libvirtd$sfx.pid"
    cp "$dir/virtlogd.pid" "$RUN/virtlogd$sfx.pid"
    timeout 30 virsh -c "$uri" version >/dev/null 2>&1 || die "private libvirtd does not answer ($LOGS/libvirtd$sfx.log)"
}

# Nova's libvirt driver runs ssh to a move's destination (the shared
# storage check of a resize or cold migration) with no timeout of its own;
# an address that drops packets hung a resize for minutes. The computes
# find this ssh first on their PATH: the real one, with a connect timeout.
ssh_wrapper() {
    mkdir -p "$DC/bin"
    printf '#!/bin/sh\nexec %s -o ConnectTimeout=10 -o ServerAliveInterval=10 -o ServerAliveCountMax=3 "$@"\n' \
        "$(command -v ssh || echo /usr/bin/ssh)" > "$DC/bin/ssh"
    chmod +x "$DC/bin/ssh"
}

# Watcher 17 builds its compute model by looking each hypervisor up by
# name with Nova's hypervisor_hostname_pattern (a substring match) and
# takes the first answer: "devcloud-libvirt" also matches
# "devcloud-libvirt2", and when that one has the lower compute node id
# Watcher's model has devcloud-libvirt2 twice and devcloud-libvirt never.
# So devcloud-libvirt registers first, with or without Watcher (Watcher may
# be added to a running cloud: devcloud-tempest.sh does).
libvirt_node_id() {  # host -> its compute node id in Nova's database, or ''
    mysql_q "SELECT id FROM \`${DB_PREFIX}nova\`.compute_nodes WHERE hypervisor_hostname = '$1' AND deleted = 0" 2>/dev/null
}

wait_first_node() {
    [ "$LIBVIRT_COMPUTES" = 2 ] || return 0
    local _
    for _ in $(seq 600); do
        [ -n "$(libvirt_node_id devcloud-libvirt)" ] && return 0
        alive compute-devcloud-libvirt || break
        sleep 0.2
    done
    die "devcloud-libvirt did not register its compute node (log: $LOGS/compute-devcloud-libvirt.log)"
}

computes_up() {
    local conf=$DC/etc/nova/nova.conf t i h
    ssh_wrapper
    for i in $(seq "$LIBVIRT_COMPUTES"); do
        [ "$i" = 2 ] && wait_first_node
        h=$(lv_host "$i")
        mkdir -p "$DC/nova/$h/instances" "$DC/nova/$h/lock"
        # In its libvirtd's mount namespace: there, LIBVIRT_INSTANCES is
        # this compute's own instances directory.
        PATH=$DC/bin:$PATH start_svc "compute-$h" nsenter -t "$(cat "$RUN/libvirtd$(lv_sfx "$i").pid")" -m -- \
            "$VENV/bin/nova-compute" --config-file "$conf" \
            --config-file "$DC/etc/nova/compute-$h.conf"
    done
    for t in $FAKE_COMPUTES; do
        mkdir -p "$DC/nova/devcloud-$t/instances" "$DC/nova/devcloud-$t/lock"
        DEVCLOUD_TOPOLOGY=$TOOLS/topologies/$(topology_of "$t").json start_svc "compute-devcloud-$t" \
            "$PY" "$TOOLS/run_compute.py" --config-file "$conf" \
            --config-file "$DC/etc/nova/compute-devcloud-$t.conf"
    done
}

# nova-cacheaware-agent next to the libvirt compute, on the same private
# libvirtd, with its own config (rendered by render.py). It must stay up:
# a config or import error shows within seconds, so wait a little and check.
agent_up() {
    local i
    for i in $(seq "$LIBVIRT_COMPUTES"); do one_agent_up "agent$(lv_sfx "$i")" "$(lv_host "$i")"; done
}

one_agent_up() {  # service name, host
    local name=$1 conf=$DC/etc/nova-cacheaware/agent.conf
    [ "$2" = devcloud-libvirt ] || conf=$DC/etc/nova-cacheaware/agent-$2.conf
    if alive "$name"; then return 0; fi
    start_svc "$name" "$VENV/bin/nova-cacheaware-agent" --config-file "$conf"
    local _
    for _ in $(seq 50); do
        grep -q 'nova-cacheaware-agent .* starting' "$LOGS/$name.log" 2>/dev/null && break
        alive "$name" || break
        sleep 0.2
    done
    if ! alive "$name"; then
        tail -n 30 "$LOGS/$name.log" >&2
        die "nova-cacheaware-agent exited (log: $LOGS/$name.log)"
    fi
}

# The real agent for each fake compute not named "-plain", one process
# (fake_agents.py); after the computes registered, so that their providers
# exist. Its agents' choices: $RUN/fake-agents.json.
fake_agents_up() {
    [ "$FAKE_AGENTS" = 1 ] || return 0
    if alive fake-agents; then return 0; fi
    local t hosts=()
    for t in $FAKE_COMPUTES; do
        case "$t" in *-plain|*-plain-[0-9]*) ;; *) hosts+=("devcloud-$t") ;; esac
    done
    [ ${#hosts[@]} -gt 0 ] || return 0
    start_svc fake-agents "$PY" "$TOOLS/fake_agents.py" \
        --period "${DEVCLOUD_AGENT_PERIOD:-3}" --provider-model "$FAKE_AGENTS_MODEL" \
        --state "$RUN/fake-agents.json" "${hosts[@]}"
    local _
    for _ in $(seq 150); do
        grep -q 'agents running' "$LOGS/fake-agents.log" 2>/dev/null && return 0
        alive fake-agents || break
        sleep 0.2
    done
    tail -n 30 "$LOGS/fake-agents.log" >&2
    die "fake_agents.py did not start (log: $LOGS/fake-agents.log)"
}

cmd_up() {
    local t0 n
    t0=$(date +%s)
    mkdir -p "$DC" "$RUN" "$LOGS" "$DC/image" "$DC/nova/state" "$DC/nova/lock" "$LIBVIRT_DIR" \
        "$DC/counter-traces"
    ensure_venv
    ensure_secrets
    export_env
    "$TOOLS/build_image.sh" "$DC/image" >> "$LOGS/build-image.log" 2>&1 \
        || die "building the guest image failed ($LOGS/build-image.log)"
    ensure_backends
    port_free_or_ours keystone "$KEYSTONE_PORT" DEVCLOUD_KEYSTONE_PORT
    port_free_or_ours placement "$PLACEMENT_PORT" DEVCLOUD_PLACEMENT_PORT
    port_free_or_ours nova-api "$NOVA_PORT" DEVCLOUD_NOVA_PORT
    port_free_or_ours "$IMAGE_SVC" "$IMAGE_PORT" DEVCLOUD_IMAGE_PORT
    port_free_or_ours cacheaware-api "$CACHEAWARE_API_PORT" DEVCLOUD_CACHEAWARE_API_PORT
    [ "$WITH_WATCHER" = 1 ] && port_free_or_ours watcher-api "$WATCHER_PORT" DEVCLOUD_WATCHER_PORT
    timeout 120 "$PY" "$TOOLS/render.py" > "$DC/etc-plugins.out" || die "render.py failed"
    log "configuration in $DC/etc"
    cmd_plugins >&2

    if [ "$WITH_GLANCE" = 1 ]; then
        start_svc image "$PY" "$TOOLS/image_stub.py" "$DC/image" - "$NETWORK_PORT"
    else
        start_svc image "$PY" "$TOOLS/image_stub.py" "$DC/image" "$IMAGE_PORT" "$NETWORK_PORT"
    fi
    keystone_up
    if [ ! -f "$DC/nova/.placement-synced" ]; then
        timeout 600 "$VENV/bin/placement-manage" --config-file "$DC/etc/placement/placement.conf" db sync \
            >> "$LOGS/placement-manage.log" 2>&1 || die "placement db sync failed"
        touch "$DC/nova/.placement-synced"
    fi
    OS_PLACEMENT_CONFIG_DIR=$DC/etc/placement start_svc placement \
        "$PY" "${WSGI_SERVE[@]}" placement.wsgi.api "$PLACEMENT_PORT"
    nova_db
    wait_http keystone "http://127.0.0.1:$KEYSTONE_PORT/v3"
    timeout 300 "$PY" "$TOOLS/keystone_setup.py" >> "$LOGS/keystone-setup.log" 2>&1 \
        || { tail -n 20 "$LOGS/keystone-setup.log" >&2; die "keystone_setup.py failed"; }
    glance_up
    start_svc conductor "$VENV/bin/nova-conductor" --config-file "$DC/etc/nova/nova.conf"
    start_svc scheduler "$VENV/bin/nova-scheduler" --config-file "$DC/etc/nova/nova.conf"
    OS_NOVA_CONFIG_DIR=$DC/etc/nova start_svc nova-api \
        "$PY" "${WSGI_SERVE[@]}" nova.wsgi.osapi_compute "$NOVA_PORT"
    # The status API behind "openstack cacheaware": keystonemiddleware in
    # front, admin-only policy; it listens to the agents' state topic.
    NOVA_CACHEAWARE_API_CONFIG=$DC/etc/nova-cacheaware/api.conf start_svc cacheaware-api \
        "$PY" "${WSGI_SERVE[@]}" nova_cacheaware.status.app:init_application "$CACHEAWARE_API_PORT"
    libvirt_up
    computes_up
    agent_up
    wait_http placement "http://127.0.0.1:$PLACEMENT_PORT/"
    wait_http cacheaware-api "http://127.0.0.1:$CACHEAWARE_API_PORT/"
    wait_http nova-api "http://127.0.0.1:$NOVA_PORT/"
    n=$(echo "$DEVCLOUD_COMPUTES" | grep -o '"name"' | wc -l)
    "$PY" "$TOOLS/cloud.py" wait-computes "$n" --timeout 240 \
        || { "$0" status; dead_logs; die "computes did not come up; see $LOGS"; }
    timeout 120 "$PY" "$TOOLS/cloud.py" zones >> "$LOGS/zones.log" 2>&1 \
        || die "creating the availability zones failed ($LOGS/zones.log)"
    fake_agents_up
    watcher_up
    log "up in $(( $(date +%s) - t0 )) s; credentials: $DC/clouds.yaml (cloud 'devcloud'), $DC/openrc"
}

# Why services died or computes never reported: the last error lines of
# each dead service's log and of the conductor's, on stdout, so that a CI
# log that keeps only the output still says it.
dead_logs() {
    local f name
    for f in "$RUN"/*.pid; do
        [ -e "$f" ] || continue
        name=$(basename "$f" .pid)
        if alive "$name" && [ "$name" != conductor ]; then continue; fi
        [ -f "$LOGS/$name.log" ] || continue
        echo "--- $name: last errors in $LOGS/$name.log"
        grep -E ' (CRITICAL|ERROR) ' "$LOGS/$name.log" | tail -n 8 | cut -c1-400
    done
}

cmd_plugins() {
    [ -f "$DC/etc/plugins.json" ] || return 0
    python3 - "$DC/etc/plugins.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print('enabled_filters: ' + ','.join(d['enabled_filters']))
print('weight_classes: ' + ','.join(d['weight_classes']))
for n in d['notes']:
    print('note: ' + n)
EOF
}

cmd_status() {
    local name rc=0
    printf '%-28s %-8s %s\n' SERVICE STATE PID
    for f in "$RUN"/*.pid; do
        [ -e "$f" ] || { echo "(nothing started)"; return 3; }
        name=$(basename "$f" .pid)
        if alive "$name"; then
            printf '%-28s %-8s %s\n' "$name" up "$(cat "$f")"
        else
            printf '%-28s %-8s %s\n' "$name" DEAD "$(cat "$f")"; rc=1
        fi
    done
    local watcher=''
    alive watcher-api && watcher=", watcher :$WATCHER_PORT"
    echo "endpoints: keystone :$KEYSTONE_PORT, nova :$NOVA_PORT, placement :$PLACEMENT_PORT, $IMAGE_SVC :$IMAGE_PORT, network stub :$NETWORK_PORT, cacheaware-api :$CACHEAWARE_API_PORT$watcher (127.0.0.1)"
    cmd_plugins
    echo "logs: $LOGS"
    return $rc
}

cmd_down() {
    local name db i uri
    # Both libvirt computes, whatever DEVCLOUD_LIBVIRT_COMPUTES says now.
    for i in 1 2; do
        alive "libvirtd$(lv_sfx "$i")" || continue
        uri=$(lv_uri "$i")
        for name in $(timeout 30 virsh -c "$uri" list --all --name 2>/dev/null); do
            timeout 30 virsh -c "$uri" destroy "$name" >/dev/null 2>&1
            timeout 30 virsh -c "$uri" undefine --nvram "$name" >/dev/null 2>&1 \
                || timeout 30 virsh -c "$uri" undefine "$name" >/dev/null 2>&1
        done
    done
    # Nova services first (they talk to the rest while shutting down), all
    # at once: nova-compute's graceful stop takes seconds each.
    # Watcher first: its applier may be migrating a server.
    # shellcheck disable=SC2086
    stop_many $WATCHER_SERVICES
    local first=(agent agent2 fake-agents cacheaware-api nova-api scheduler conductor
                 compute-devcloud-libvirt compute-devcloud-libvirt2)
    for t in $FAKE_COMPUTES; do first+=("compute-devcloud-$t"); done
    stop_many "${first[@]}"
    stop_many glance placement keystone image libvirtd virtlogd libvirtd2 virtlogd2
    for f in "$RUN"/*.pid; do [ -e "$f" ] && stop_many "$(basename "$f" .pid)"; done
    if mysql_q "SELECT 1" >/dev/null 2>&1; then
        for db in $DATABASES; do mysql_q "DROP DATABASE IF EXISTS \`$DB_PREFIX$db\`"; done
    fi
    if timeout 60 rabbitmqctl -q list_vhosts 2>/dev/null | grep -qx "$RABBIT_VHOST"; then
        timeout 60 rabbitmqctl -q delete_vhost "$RABBIT_VHOST" >/dev/null 2>&1
    fi
    rm -rf "${DC:?}/nova" "${DC:?}/keystone" "${DC:?}/glance" "${DC:?}/watcher" "${DC:?}/counter-traces" "${DC:?}/etc" "${LIBVIRT_DIR:?}" "$(lv_dir 2)" "${RUN:?}" "${DC:?}/etc-plugins.out"
    if [ "${1:-}" = "--purge" ]; then
        rm -rf "$DC"
    fi
    log "down"
}

case "${1:-}" in
up) cmd_up ;;
down) shift; cmd_down "$@" ;;
status) cmd_status ;;
backends) mkdir -p "$DC" "$LOGS"; ensure_backends ;;
*) echo "usage: $0 up|down [--purge]|status|backends" >&2; exit 2 ;;
esac
