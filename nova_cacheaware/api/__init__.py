"""The flavor extra specs on Nova's API side.

Nova's validators for the ``cacheaware:`` keys, the rules between keys
and what ``nova-cacheaware flavor set`` writes; doc/source/user/flavor.rst
and doc/source/contributor/architecture.rst.
"""
