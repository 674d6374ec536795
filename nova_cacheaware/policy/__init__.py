"""The live state's pure rules, shared by the agent, relays and schedulers.

:mod:`.liveness` (when a host's live state may be trusted),
:mod:`.state_cadence` (when an agent sends its full state, a heartbeat or
nothing) and :mod:`.state_relay` (what a relay forwards, folds into a
digest or drops). Nothing here does I/O, reads configuration or the
clock, or imports nova, libvirt or oslo. The capabilities' own pure
modules live in their packages (:mod:`nova_cacheaware.cachedomain`,
:mod:`nova_cacheaware.pcpu_est`, :mod:`nova_cacheaware.vcpu_sizing`,
:mod:`nova_cacheaware.balloon`, :mod:`nova_cacheaware.numa_balance`,
:mod:`nova_cacheaware.rebalance`).
"""
