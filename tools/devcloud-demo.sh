#!/usr/bin/env bash
# The demo on the devcloud: cache-aware flavors, a set of servers, where each
# landed (host, Placement allocation with its cache domain provider, the real
# vCPU pinning on the libvirt compute), then teardown.
#
#   tools/devcloud-demo.sh [--keep]     (brings the devcloud up if needed)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
DC=${DEVCLOUD_DIR:-$PWD/.devcloud}
if ! bash tools/devcloud.sh status >/dev/null 2>&1; then
    bash tools/devcloud.sh up || exit 1
fi
export DEVCLOUD_DIR=$DC OS_CLIENT_CONFIG_FILE=$DC/clouds.yaml
exec "$DC/venv/bin/python" tools/devcloud/cloud.py demo "$@"
