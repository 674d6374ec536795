#!/usr/bin/env bash
# Set up a development/test environment on a fresh Debian 12 machine.
#
# Installs the Debian packages the project needs (libvirt headers so that
# libvirt-python builds, the libvirt client library for the test:/// driver)
# and a virtualenv in .venv with the package and its test requirements.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

# libvirt-dev/pkg-config/gcc build libvirt-python; libvirtd + QEMU (TCG) are
# the real hypervisor the functional tests run against; busybox runs the
# guest helper's tests in the shell guests have.
APT_PACKAGES="libvirt-dev libvirt0 libvirt-clients pkg-config gcc python3-dev
 libvirt-daemon libvirt-daemon-system libvirt-daemon-driver-qemu
 qemu-system-x86 qemu-utils util-linux shellcheck busybox"
VENV=${NOVA_CACHEAWARE_VENV:-.venv}
PYTHON=${PYTHON:-python3}

missing=()
for p in $APT_PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating virtualenv $VENV"
    "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.requirements.sha"
# Nova and Placement: the release the plugins are built for (other
# releases have opt-in tox environments, see requirements/).
NOVA_PINS=requirements/nova-34.txt
want=$(cat requirements.txt test-requirements.txt "$NOVA_PINS" setup.cfg | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "setup: installing Python requirements into $VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q -r requirements.txt -r test-requirements.txt -r "$NOVA_PINS"
    "$VENV/bin/pip" install -q -e .
    echo "$want" > "$stamp"
fi
echo "setup: ready ($VENV)"
