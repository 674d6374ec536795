"""The algorithms: pure functions over plain dataclasses.

Nothing in this package does I/O, reads configuration or the clock, or imports
nova, libvirt or oslo. Inputs and outputs round-trip to JSON so that every
decision the agent takes can be replayed with the ``nova-cacheaware`` CLI.
"""
