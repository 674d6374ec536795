"""The ``balloon`` capability: hit-ratio memory ballooning (study 002).

Pure (no I/O, no CONF, no clock): :mod:`.model` (a round's typed values
and the host report's section), :mod:`.study_balancer` (study 002's modes
A and B), :mod:`.default_balancer` (our default policy), :mod:`.policy`
(one round of the agent's balancer: a policy plus the safety guard) and
:mod:`.guest_report` (what a guest may say about its page cache).
Adapters: :mod:`.view` (what the capability reads from and sets in
libvirt and the guest helper) and :mod:`.agent` (the capability's
reconcile and its factory, the ``nova_cacheaware.agent.capabilities``
entry point). ``nova-cacheaware balloon-plan`` replays a round offline.
"""
