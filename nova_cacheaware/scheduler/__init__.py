"""nova-scheduler's plugins: filters, weighers and the live state.

doc/source/admin/scheduler.rst and
doc/source/contributor/architecture.rst.
"""
