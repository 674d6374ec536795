#!/usr/bin/env bash
# Opt-in: run Nova's own nova.tests.functional.libvirt.test_numa_servers with
# CacheDomainFilter and CacheAwareWeigher enabled next to Nova's
# defaults (tests/nova_numa re-exports Nova's test classes with our plugins).
# Extra arguments go to stestr (e.g. a test-name regex).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bash tools/setup.sh || exit 1
VENV=${NOVA_CACHEAWARE_VENV:-.venv}
export PATH="$PWD/$VENV/bin:$PATH" TEST_CONCURRENCY=${TEST_CONCURRENCY:-2}
exec bash tools/suite.sh nova-numa "$@"
