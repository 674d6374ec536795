"""Nova's own NUMA functional tests, re-run with nova-cacheaware enabled.

Opt-in (``tox -e functional-nova-numa`` or ``tools/run-nova-numa-tests.sh``),
not part of the default run: it re-runs a whole module of Nova's suite.
"""

import os
import sys

if 'eventlet' not in sys.modules:
    os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', 'true')

from nova import monkey_patch  # noqa: E402

monkey_patch.patch()
