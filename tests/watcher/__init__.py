"""The Watcher plugin against the real Watcher, in processes of its own.

Watcher and Nova cannot be imported into one process: both register
options named ``host`` and ``max_limit`` on oslo.config's global CONF, with
other definitions (``DuplicateOptError``), and the unit suite imports Nova.
In a cloud they never share a process either (the plugin runs inside
Watcher's decision engine), so these tests have their own suite:
``tools/suite.sh watcher`` (tox -e watcher).
"""
