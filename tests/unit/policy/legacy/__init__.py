"""The hand-written walkers the declared schemas replaced (issue 18).

Kept verbatim for one release so that ``test_declared_schemas`` can show
that old and new accept the same documents and word their refusals the
same; delete this package with that test.
"""
