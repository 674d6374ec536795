#!/usr/bin/env bash
# Set up a development/test environment on a fresh Debian 12 machine.
#
# Installs the Debian packages the project needs (libvirt headers so that
# libvirt-python builds, the libvirt client library for the test:/// driver)
# and a virtualenv in .venv with the package and its test requirements.
# Idempotent: a second run only checks.
#
#   tools/setup.sh              .venv with Nova 34 (requirements/nova-34.txt)
#   tools/setup.sh --nova 33    .venv-nova33 with Nova 33 under 2026.1's
#                               upper-constraints (what tox -e
#                               functional-nova33 installs); --nova 31 alike
#                               under 2025.1's
set -euo pipefail
cd "$(dirname "$0")/.."

# Nova releases other than the default one: their pins are in
# requirements/nova-<major>.txt, their series' upper-constraints (copied from
# openstack/requirements, see requirements/upper-constraints/README.rst) in
# requirements/upper-constraints/<series>.txt, as tox.ini uses them.
NOVA_RELEASE=34
if [ "${1:-}" = "--nova" ]; then
    NOVA_RELEASE=${2:?usage: tools/setup.sh [--nova 31|33|34]}
fi
CONSTRAINTS=()
case "$NOVA_RELEASE" in
34) DEFAULT_VENV=.venv ;;
33) DEFAULT_VENV=.venv-nova33
    CONSTRAINTS=(-c "${TOX_CONSTRAINTS_FILE_2026_1:-requirements/upper-constraints/2026.1.txt}") ;;
31) DEFAULT_VENV=.venv-nova31
    CONSTRAINTS=(-c "${TOX_CONSTRAINTS_FILE_2025_1:-requirements/upper-constraints/2025.1.txt}") ;;
*) echo "setup: no pins for Nova $NOVA_RELEASE (31, 33 or 34)" >&2; exit 2 ;;
esac

# libvirt-dev/pkg-config/gcc build libvirt-python; libvirtd + QEMU (TCG) are
# the real hypervisor the functional tests run against; busybox runs the
# guest helper's tests in the shell guests have; prometheus scrapes the
# metrics in their functional tests; chromium (headless) screenshots the
# host map's SVG in its functional test.
APT_PACKAGES="libvirt-dev libvirt0 libvirt-clients pkg-config gcc python3-dev
 libvirt-daemon libvirt-daemon-system libvirt-daemon-driver-qemu
 qemu-system-x86 qemu-utils util-linux shellcheck busybox prometheus
 chromium"
if [ "$NOVA_RELEASE" = 34 ]; then
    VENV=${NOVA_CACHEAWARE_VENV:-$DEFAULT_VENV}
else
    VENV=$DEFAULT_VENV
fi
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
NOVA_PINS=requirements/nova-$NOVA_RELEASE.txt
want=$(cat requirements.txt test-requirements.txt "$NOVA_PINS" setup.cfg evaluation/setup.cfg \
    ${CONSTRAINTS[@]:+"${CONSTRAINTS[1]}"} | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    # pip's own output (warnings about index locations included) goes to
    # a log: the steps and their times are what a person reads here.
    pip_log="$VENV/pip-install.log"
    : > "$pip_log"
    pip_step() {  # what -- pip arguments
        local what=$1 t0=$SECONDS
        shift
        echo "setup: $what (pip output: $pip_log)"
        if ! "$VENV/bin/pip" install -q "$@" >> "$pip_log" 2>&1; then
            echo "setup: pip failed while $what; the end of $pip_log:" >&2
            grep -v '^WARNING: Location' "$pip_log" | tail -20 >&2
            exit 1
        fi
        echo "setup: done in $((SECONDS - t0)) s"
    }
    pip_step "upgrading pip" --upgrade pip
    pip_step "installing Python requirements into $VENV (minutes the first time)" \
        ${CONSTRAINTS[@]:+"${CONSTRAINTS[@]}"} \
        -r requirements.txt -r test-requirements.txt -r "$NOVA_PINS"
    # The evaluation distribution (simulators, probe, baselines) beside
    # the product: the tests and benchmarks use both.
    pip_step "installing nova-cacheaware and its evaluation into $VENV" \
        ${CONSTRAINTS[@]:+"${CONSTRAINTS[@]}"} -e . -e ./evaluation
    echo "$want" > "$stamp"
fi
echo "setup: ready ($VENV, ${SECONDS} s)"
