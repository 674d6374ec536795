"""Functional tests on Nova's own functional base (real API, conductor,
scheduler, in-process Placement, libvirt driver on Nova's fake libvirt).

Nova's concurrency mode is applied by :mod:`tests.functional`.
"""
