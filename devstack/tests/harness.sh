#!/bin/bash
# shellcheck shell=bash
# Run one phase of devstack/plugin.sh outside DevStack, for tests.
#
# Usage: harness.sh SCRATCH_DIR ENABLED_SERVICES PHASE [SUBPHASE]
#
# DevStack's own functions are replaced by small stand-ins that act on
# files under SCRATCH_DIR (ini editing is real: Python's configparser keeps
# multi-valued options as repeated lines, as DevStack does); commands that
# would start processes or talk to a cloud are recorded in
# SCRATCH_DIR/calls.log instead.
set -eu
SCRATCH=$1 ENABLED=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
export DEST=$SCRATCH/opt NOVA_CONF=$SCRATCH/nova.conf
export NOVA_CACHEAWARE_CONF_DIR=$SCRATCH/etc/nova-cacheaware
export PLACEMENT_CONF=$SCRATCH/placement.conf
export NOVA_CACHEAWARE_LIBVIRT_HOOKS_DIR=$SCRATCH/etc/libvirt/hooks
export NOVA_CACHEAWARE_STATE_DIR=$SCRATCH/var/lib/nova-cacheaware
export LIBVIRT_GROUP=libvirt
NOVA_BIN_DIR=$SCRATCH/bin STACK_USER=$(id -un) ENABLE_DEBUG_LOG_LEVEL=True
KEYSTONE_SERVICE_URI=http://127.0.0.1/identity SERVICE_PASSWORD=secretpw
SERVICE_DOMAIN_NAME=Default SERVICE_PROJECT_NAME=service REGION_NAME=RegionOne
export NOVA_BIN_DIR STACK_USER ENABLE_DEBUG_LOG_LEVEL KEYSTONE_SERVICE_URI
export SERVICE_PASSWORD SERVICE_DOMAIN_NAME SERVICE_PROJECT_NAME REGION_NAME
CALLS=$SCRATCH/calls.log
# The real nova-cacheaware CLI (HARNESS_PYTHON: an interpreter that has the
# package) under NOVA_BIN_DIR, where setup_develop would put it; libvirt's
# configuration directory exists on a compute node.
mkdir -p "$NOVA_BIN_DIR" "$SCRATCH/etc/libvirt"
printf '#!/bin/sh\nexec "%s" -m nova_cacheaware.cmd.cli "$@"\n' \
    "${HARNESS_PYTHON:-python3}" > "$NOVA_BIN_DIR/nova-cacheaware"
chmod +x "$NOVA_BIN_DIR/nova-cacheaware"
INI=(python3 "$HERE/ini.py")

function echo_summary { echo "summary: $*" >> "$CALLS"; }
function trueorfalse { local v=${!2:-$1}; [[ "$v" =~ ^([Tt]rue|1|yes)$ ]] && echo True || echo False; }
# As DevStack's: a service in DISABLED_SERVICES (disable_service in
# local.conf) is not enabled again by a plugin's settings.
function enable_service { [[ ",${DISABLED_SERVICES:-}," == *",$1,"* ]] || ENABLED="$ENABLED,$1"; }
function is_service_enabled {
    local s
    for s in "$@"; do [[ ",$ENABLED," == *",$s,"* ]] && return 0; done
    return 1
}
function iniset { "${INI[@]}" set "$@"; }
function iniget { "${INI[@]}" get "$@"; }
function iniadd { "${INI[@]}" add "$@"; }
function iniget_multiline { "${INI[@]}" get_multi "$@"; }
function get_notification_url { echo "rabbit://stackrabbit:secretpw@127.0.0.1:5672/"; }
function setup_develop { echo "setup_develop $*" >> "$CALLS"; }
function run_process { echo "run_process $*" >> "$CALLS"; }
function stop_process { echo "stop_process $*" >> "$CALLS"; }
function openstack { echo "openstack $*" >> "$CALLS"; [[ "$1 $2" != "flavor show" ]]; }
function nova-cacheaware { echo "nova-cacheaware $*" >> "$CALLS"; }
function restart_service { echo "restart_service $*" >> "$CALLS"; }
function sudo {
    echo "sudo $*" >> "$CALLS"
    if [[ "$1" == "install" || "$1" == "rm" || "$1" == "$NOVA_BIN_DIR/nova-cacheaware" ]]; then "$@"; fi
}

# shellcheck source=/dev/null
source "$HERE/../settings"
# shellcheck source=/dev/null
source "$HERE/../plugin.sh"
