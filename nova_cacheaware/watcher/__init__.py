"""The OpenStack Watcher plugin: goal ``cache_isolation``, strategy
``cache_rebalance`` (issue 33).

:mod:`.snapshot` (pure) and :mod:`.sources` (the I/O edge) import no
Watcher; :mod:`.goal` and :mod:`.strategy` are Watcher plugins and import
it: they are loaded only through Watcher's ``watcher_goals`` and
``watcher_strategies`` entry points, where Watcher is installed.
"""
