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
NOVA_BIN_DIR=$SCRATCH/bin STACK_USER=$(id -un) ENABLE_DEBUG_LOG_LEVEL=True
KEYSTONE_SERVICE_URI=http://127.0.0.1/identity SERVICE_PASSWORD=secretpw
SERVICE_DOMAIN_NAME=Default SERVICE_PROJECT_NAME=service REGION_NAME=RegionOne
export NOVA_BIN_DIR STACK_USER ENABLE_DEBUG_LOG_LEVEL KEYSTONE_SERVICE_URI
export SERVICE_PASSWORD SERVICE_DOMAIN_NAME SERVICE_PROJECT_NAME REGION_NAME
CALLS=$SCRATCH/calls.log
INI=(python3 "$HERE/ini.py")

function echo_summary { echo "summary: $*" >> "$CALLS"; }
function trueorfalse { local v=${!2:-$1}; [[ "$v" =~ ^([Tt]rue|1|yes)$ ]] && echo True || echo False; }
function enable_service { ENABLED="$ENABLED,$1"; }
function is_service_enabled {
    local s
    for s in "$@"; do [[ ",$ENABLED," == *",$s,"* ]] && return 0; done
    return 1
}
function iniset { "${INI[@]}" set "$@"; }
function iniget { "${INI[@]}" get "$@"; }
function iniadd { "${INI[@]}" add "$@"; }
function iniget_multiline { "${INI[@]}" get_multi "$@"; }
function get_transport_url { echo "rabbit://stackrabbit:secretpw@127.0.0.1:5672/"; }
function setup_develop { echo "setup_develop $*" >> "$CALLS"; }
function run_process { echo "run_process $*" >> "$CALLS"; }
function stop_process { echo "stop_process $*" >> "$CALLS"; }
function openstack { echo "openstack $*" >> "$CALLS"; [[ "$1 $2" != "flavor show" ]]; }
function nova-cacheaware { echo "nova-cacheaware $*" >> "$CALLS"; }
function sudo { if [[ "$1" == "install" || "$1" == "rm" ]]; then "$@"; else echo "sudo $*" >> "$CALLS"; fi; }

# shellcheck source=/dev/null
source "$HERE/../settings"
# shellcheck source=/dev/null
source "$HERE/../plugin.sh"
