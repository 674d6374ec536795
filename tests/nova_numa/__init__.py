"""Nova's own NUMA functional tests, re-run with nova-cacheaware enabled.

Opt-in (``tox -e functional-nova-numa`` or ``tools/run-nova-numa-tests.sh``),
not part of the default run: it re-runs a whole module of Nova's suite.
"""

from tests import nova_concurrency

nova_concurrency.apply()
