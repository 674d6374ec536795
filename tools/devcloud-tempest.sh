#!/usr/bin/env bash
# Run the nova-cacheaware tempest plugin against the devcloud.
#
#   tools/devcloud-tempest.sh [extra `tempest run` arguments]
#
# With OpenStack Watcher in the cloud (DEVCLOUD_WATCHER=1, the default
# here, unlike tools/devcloud.sh up) for the Watcher scenarios
# (test_watcher); DEVCLOUD_WATCHER=0 leaves it out and they skip.
#
# Brings the devcloud up (idempotent; reinstalls this checkout into its venv
# when setup.cfg changed, so the plugin's entry point is current), syncs the
# cache domain providers when that code is installed, writes a tempest
# workspace in .devcloud/tempest with a tempest.conf for the cloud, runs
# `tempest run --regex nova_cacheaware_tempest_plugin`, prints the result
# and the time, and on failure the tail of every service log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
DC=${DEVCLOUD_DIR:-$ROOT/.devcloud}
VENV=$DC/venv
WS=$DC/tempest
t0=$(date +%s)
# Watcher costs about 6 s at up, 0.4 GB and its scenarios about 150 s
# (doc/source/admin/watcher.rst): part of the default test run.
export DEVCLOUD_WATCHER=${DEVCLOUD_WATCHER:-1}

# One retry from scratch: a cloud that did not come up on a loaded host
# (or over an earlier cloud's state) is taken down and brought up again;
# the first attempt's logs are kept beside the new ones.
if ! bash tools/devcloud.sh up; then
    echo "devcloud-tempest: the cloud did not come up; down and one more try"
    rm -rf "$DC/logs.failed-up"
    cp -a "$DC/logs" "$DC/logs.failed-up" 2>/dev/null
    bash tools/devcloud.sh down || true
    bash tools/devcloud.sh up || exit 1
fi
# shellcheck disable=SC1091
. "$DC/secrets.env"
export DEVCLOUD_DIR=$DC OS_CLIENT_CONFIG_FILE=$DC/clouds.yaml
CLOUD="$VENV/bin/python tools/devcloud/cloud.py"
$CLOUD sync-domains || exit 1
flavor=$($CLOUD ensure-flavor devcloud.tempest 1 128 1) || exit 1
validators=$("$VENV/bin/python" - <<'PY'
from importlib import metadata
eps = metadata.entry_points(group='nova.api.extra_spec_validators')
print(any(ep.value.startswith('nova_cacheaware') for ep in eps))
PY
)
image=$("$VENV/bin/python" -c 'import sys; sys.path.insert(0, "tools/devcloud"); import image_stub; print(image_stub.DISK_ID)')
# The full-NUMA tests' host shapes; the agent capability tests' host and
# capabilities (none without the libvirt compute and its agent).
numa_shapes=$("$VENV/bin/python" tools/devcloud/numa_shapes.py) || exit 1
agent_conf=$DC/etc/nova-cacheaware/agent.conf
agent_host=''
capabilities=''
balloon_pool=0
# Real Glance (the devcloud's default) or the read-only image stub.
glance_available=False
[ "${DEVCLOUD_GLANCE:-1}" = 1 ] && glance_available=True
if [ "${DEVCLOUD_LIBVIRT:-1}" = 1 ] && [ -f "$agent_conf" ]; then
    agent_host=devcloud-libvirt
    capabilities=$(sed -n 's/^capabilities *= *//p' "$agent_conf")
    balloon_pool=$(sed -n '/^\[balloon\]/,/^\[/s/^pool_mib *= *//p' "$agent_conf")
fi
# The operator CLI test (openstack cacheaware ...): a host whose agent
# answers nova-cacheaware-api, the libvirt compute's or a fake agent's.
status_hosts=$agent_host
if [ -z "$status_hosts" ] && [ "${DEVCLOUD_FAKE_AGENTS:-0}" = 1 ]; then
    for t in ${DEVCLOUD_FAKE_COMPUTES:-fake-zen fake-ecluster}; do
        case "$t" in *-plain|*-plain-[0-9]*) ;; *) status_hosts=devcloud-$t; break ;; esac
    done
fi
# The live-migration test: from devcloud-libvirt2 (per-domain agent, L2
# domains: it pins the guest) to devcloud-libvirt and back; tempest reads
# the pins through the private daemons' sockets (read-only).
# The repinning test fills devcloud-libvirt2's two L2 domains too.
live_migration=False
migration_hosts=''
repin_host=''
libvirt_uris=''
if [ -f "$DC/run/compute-devcloud-libvirt2.pid" ] \
        && kill -0 "$(cat "$DC/run/compute-devcloud-libvirt2.pid")" 2>/dev/null; then
    live_migration=True
    migration_hosts=devcloud-libvirt2,devcloud-libvirt
    repin_host=devcloud-libvirt2
    libvirt_uris="devcloud-libvirt:qemu+unix:///system?socket=$DC/libvirt/sock/libvirt-sock,devcloud-libvirt2:qemu+unix:///system?socket=$DC/libvirt2/sock/libvirt-sock"
fi
# The Watcher scenarios (DEVCLOUD_WATCHER=1 brings Watcher up): from
# devcloud-libvirt (one cache domain: two memory-bound servers share it) to
# devcloud-libvirt2 (one domain per L2); the agents replay the counter
# traces tempest writes into their counter_trace_dir.
watcher=False
watcher_hosts=''
counter_trace_dir=''
if [ -f "$DC/run/watcher-api.pid" ] && kill -0 "$(cat "$DC/run/watcher-api.pid")" 2>/dev/null \
        && [ "$live_migration" = True ]; then
    watcher=True
    watcher_hosts=devcloud-libvirt,devcloud-libvirt2
    counter_trace_dir=$(sed -n 's/^counter_trace_dir *= *//p' "$agent_conf")
fi

# The workspace registry stays inside .devcloud: tempest's default one
# (~/.tempest/workspace.yaml) is per user and refuses a second workspace of
# the same name, e.g. from another checkout on the same machine.
if [ ! -d "$WS/etc" ]; then
    "$VENV/bin/tempest" init --workspace-path "$DC/tempest-workspaces.yaml" \
        --name "cacheaware-devcloud-$$" "$WS" > "$DC/tempest-init.log" 2>&1 || {
        echo "devcloud-tempest: tempest init failed:" >&2
        cat "$DC/tempest-init.log" >&2
        exit 1
    }
fi
cat > "$WS/etc/tempest.conf" <<EOC
[DEFAULT]
log_file = tempest.log
[auth]
admin_username = admin
admin_password = $DEVCLOUD_ADMIN_PASSWORD
admin_project_name = admin
admin_domain_name = Default
use_dynamic_credentials = True
[identity]
uri_v3 = http://127.0.0.1:${DEVCLOUD_KEYSTONE_PORT:-15000}/v3
auth_version = v3
region = RegionOne
[identity-feature-enabled]
api_v2 = False
[compute]
image_ref = $image
flavor_ref = $flavor
build_timeout = 300
min_microversion = 2.1
max_microversion = latest
[compute-feature-enabled]
console_output = True
live_migration = $live_migration
block_migration_for_live_migration = False
[service_available]
nova = True
glance = $glance_available
neutron = False
cinder = False
swift = False
[cacheaware]
image_ref = $image
api_validators = $validators
numa_shapes = $numa_shapes
guest_image_ref = $image
agent_host = $agent_host
agent_capabilities = $capabilities
balloon_pool_mib = ${balloon_pool:-0}
vcpu_sizing_apply_when = always
networks_none = True
live_migration_hosts = $migration_hosts
repin_host = $repin_host
libvirt_uris = $libvirt_uris
openstack_cli = $VENV/bin/openstack
status_hosts = $status_hosts
watcher = $watcher
watcher_hosts = $watcher_hosts
counter_trace_dir = $counter_trace_dir
EOC

t1=$(date +%s)
(cd "$WS" && "$VENV/bin/tempest" run --concurrency "${TEMPEST_CONCURRENCY:-1}" \
    --regex nova_cacheaware_tempest_plugin "$@")
rc=$?
t2=$(date +%s)
echo "devcloud-tempest: tempest run $((t2 - t1)) s, total with cloud up $((t2 - t0)) s, rc=$rc"
if [ $rc -ne 0 ]; then
    for f in "$DC"/logs/*.log "$WS/tempest.log"; do
        [ -s "$f" ] || continue
        echo "===== $f (last 40 lines)"
        tail -n 40 "$f"
    done
fi
exit $rc
