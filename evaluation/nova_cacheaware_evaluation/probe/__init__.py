"""The contention probe's adapter: kernels, processes, affinity, timing.

The pure logic (working sets, CPUs, slowdown matrix, verdict) is in
:mod:`nova_cacheaware_evaluation.probe.analysis`. numpy is imported only by
the numpy kernel, in the probe's own worker processes.
"""
