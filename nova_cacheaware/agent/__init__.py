"""The compute agent: observe, decide, act on each compute host.

The capabilities (repinning, ``vcpu_sizing``, ``balloon``,
``numa_balance``), the live state it publishes and its Placement
reporting; doc/source/admin/agent.rst and
doc/source/contributor/architecture.rst.
"""
