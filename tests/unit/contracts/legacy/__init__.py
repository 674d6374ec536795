"""The hand-written walker the declared schema replaced (issue 18).

Kept verbatim for one release so that ``test_declared_schema`` can show
that old and new accept the same payloads; delete this package with
that test.
"""
