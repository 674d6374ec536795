#!/usr/bin/env bash
# Run the default test suite: unit and functional tests, flake8, and the
# tempest plugin's scenario tests against a local OpenStack (the devcloud).
#
# Sets the environment up first (tools/setup.sh), so it works on a fresh
# machine. Exits non-zero on any failure and ends with one summary line
# "N passed, N failed, N skipped" over every suite, after the name and the
# end of the traceback of each failed test.
#
# Stages: unit, Watcher plugin (tests/watcher) and functional tests and
# flake8 against Nova 34 (.venv); the unit and Nova functional tests
# against Nova 33, the SLURP release before
# (.venv-nova33, built by tools/setup.sh --nova 33 under 2026.1's
# upper-constraints, as tox -e functional-nova33); the tempest plugin on the
# devcloud.
#
# For a quick local run, NOVA_CACHEAWARE_SKIP_NOVA33=1 leaves out the Nova 33
# stage (about 5 minutes on a 2-core machine) and
# NOVA_CACHEAWARE_SKIP_DEVCLOUD=1 the devcloud + tempest stage (about 4-5
# minutes cold, 2-3 warm).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bash tools/setup.sh || exit 1
VENV=${NOVA_CACHEAWARE_VENV:-.venv}
export PATH="$PWD/$VENV/bin:$PATH"

# Services the functional tests use (libvirtd for qemu:///system, ...) are
# started by tools/test-services.sh, which stops what it started on exit;
# a devcloud this script brought up is taken down again.
devcloud_started=0
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    if [ "$devcloud_started" = 1 ]; then
        bash tools/devcloud.sh down > .test-state/devcloud-down.log 2>&1 \
            || echo "run-tests: devcloud down failed, see .test-state/devcloud-down.log"
    fi
    bash tools/test-services.sh stop || true
}
trap cleanup EXIT
mkdir -p .test-state
rm -f .test-state/*.subunit
bash tools/test-services.sh start || exit 1
export NOVA_CACHEAWARE_CI_SERVICES=1
# The real-guest tests' kernel + initramfs (with the QEMU guest agent),
# built once from Debian packages; the tests would build it themselves.
bash tools/devcloud/build_image.sh .test-state/guest-image \
    > .test-state/guest-image.log 2>&1 \
    || { echo "run-tests: building the guest image failed:"; cat .test-state/guest-image.log; exit 1; }

# Each suite is defined once, in tools/suite.sh (the tox environments run
# the same definitions).
export TEST_CONCURRENCY=${TEST_CONCURRENCY:-2}
rc=0
for suite in unit watcher functional; do
    echo "=== $suite tests"
    bash tools/suite.sh "$suite" || rc=1
    stestr last --subunit > ".test-state/$suite.subunit" 2>/dev/null || true
done
echo "=== flake8"
bash tools/suite.sh pep8 || rc=1
echo "=== docs (sphinx-build -W)"
bash tools/suite.sh docs || rc=1

if [ "${NOVA_CACHEAWARE_SKIP_NOVA33:-0}" != 1 ]; then
    # The suites of tox -e functional-nova33, in their own virtualenv.
    echo "=== Nova 33 (2026.1): unit and nova-release tests"
    if bash tools/setup.sh --nova 33 > .test-state/setup-nova33.log 2>&1; then
        for suite in unit nova-release; do
            PATH="$PWD/.venv-nova33/bin:$PATH" bash tools/suite.sh "$suite" || rc=1
            PATH="$PWD/.venv-nova33/bin:$PATH" stestr last --subunit \
                > ".test-state/nova33-$suite.subunit" 2>/dev/null || true
        done
    else
        echo "run-tests: setting up .venv-nova33 failed:"
        grep -v '^WARNING: Location' .test-state/setup-nova33.log | tail -n 30
        rc=1
    fi
fi

if [ "${NOVA_CACHEAWARE_SKIP_DEVCLOUD:-0}" != 1 ]; then
    echo "=== tempest scenario tests on the devcloud"
    bash tools/devcloud.sh status > /dev/null 2>&1 || devcloud_started=1
    bash tools/devcloud-tempest.sh || rc=1
    (cd .devcloud/tempest 2>/dev/null && ../venv/bin/stestr last --subunit) \
        > .test-state/tempest.subunit 2>/dev/null || true
    if [ ! -s .test-state/tempest.subunit ]; then
        echo "run-tests: the tempest stage produced no results"
        rc=1
    fi
fi

cat .test-state/*.subunit 2>/dev/null \
    | python tools/subunit_summary.py || rc=1
exit $rc
