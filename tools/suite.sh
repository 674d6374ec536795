#!/usr/bin/env bash
# The one definition of each test suite, shared by the tox environments and
# tools/run-tests.sh (CI):
#
#   tools/suite.sh unit|watcher|functional|nova-release|nova-numa|pep8|docs [ARGS...]
#
# ARGS go to stestr (a test-name regex, ...) or to flake8. The suite runs
# with the stestr/flake8 first on PATH: tox puts its environment's bin/
# there, run-tests.sh the project's .venv/bin. TEST_CONCURRENCY sets
# stestr's worker count (default: one per CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

suite=${1:-}
[ $# -gt 0 ] && shift
concurrency=()
if [ -n "${TEST_CONCURRENCY:-}" ]; then
    concurrency=(--concurrency "$TEST_CONCURRENCY")
fi

case "$suite" in
unit)
    # Pure tests: no services, no I/O outside temporary directories.
    exec stestr --test-path ./tests/unit run "${concurrency[@]}" "$@" ;;
watcher)
    # The Watcher plugin run by the real Watcher (python-watcher, from
    # test-requirements.txt) in-process: its own processes, as Watcher
    # and Nova cannot share one (tests/watcher/__init__.py).
    exec stestr --test-path ./tests/watcher run "${concurrency[@]}" "$@" ;;
functional)
    # Real components: this host's /sys, libvirt's test:/// driver and, where
    # a libvirtd runs, qemu:///system; Nova's functional base; Placement on
    # MariaDB; RabbitMQ.
    exec stestr --test-path ./tests/functional run "${concurrency[@]}" "$@" ;;
nova-release)
    # The functional tests that exercise Nova itself (its API, conductor,
    # scheduler and in-process Placement; the flavor CLI through Nova's
    # API), run against the other Nova releases (tox -e functional-nova33,
    # functional-nova31; tools/run-tests.sh's Nova 33 stage) together with
    # the unit suite. ARGS replace the default selection.
    [ $# -gt 0 ] || set -- 'tests.functional.nova|tests.functional.test_flavor_cli'
    exec stestr --test-path ./tests/functional run "${concurrency[@]}" "$@" ;;
nova-numa)
    # Opt-in: Nova's own NUMA functional tests with our plugins enabled.
    exec stestr --test-path ./tests/nova_numa run "${concurrency[@]}" "$@" ;;
pep8)
    exec flake8 "$@" ;;
docs)
    # Every warning is an error (as tox -e docs); a fresh build, so that
    # pages unchanged since an earlier build are checked too.
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
    sphinx-build -W --keep-going -q -b html doc/source "$out" "$@" ;;
*)
    echo "usage: tools/suite.sh unit|watcher|functional|nova-release|nova-numa|pep8|docs [ARGS...]" >&2
    exit 2 ;;
esac
