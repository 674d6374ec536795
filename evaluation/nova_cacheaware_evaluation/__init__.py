"""Simulators, the contention probe and the studies' baselines.

Not part of nova-cacheaware: see this distribution's README.
"""
