"""The simulators' hand-written walkers the declared schemas replaced.

Kept verbatim for one release so that ``tests/unit/sim/test_declared_schemas``
can show that old and new accept the same documents and word their
refusals the same; delete this package with that test (issue 18).
"""
