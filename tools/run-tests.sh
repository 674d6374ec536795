#!/usr/bin/env bash
# Run the default test suite: unit + functional tests, and flake8.
#
# Sets the environment up first (tools/setup.sh), so it works on a fresh
# machine. Exits non-zero on any failure and ends with one summary line
# "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bash tools/setup.sh || exit 1
VENV=${NOVA_CACHEAWARE_VENV:-.venv}
export PATH="$PWD/$VENV/bin:$PATH"

# Services the functional tests use (libvirtd for qemu:///system, ...) are
# started by tools/test-services.sh, which stops what it started on exit.
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() { bash tools/test-services.sh stop || true; }
trap cleanup EXIT
bash tools/test-services.sh start || exit 1
export NOVA_CACHEAWARE_CI_SERVICES=1
mkdir -p .test-state
rm -f .test-state/*.subunit

rc=0
for suite in unit functional; do
    echo "=== $suite tests"
    stestr --test-path "./tests/$suite" run --concurrency "${TEST_CONCURRENCY:-2}" || rc=1
    stestr last --subunit > ".test-state/$suite.subunit" 2>/dev/null || true
done
echo "=== flake8"
flake8 || rc=1

cat .test-state/unit.subunit .test-state/functional.subunit 2>/dev/null \
    | python tools/subunit_summary.py || rc=1
exit $rc
