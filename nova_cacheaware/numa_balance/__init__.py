"""The ``numa_balance`` capability: full-NUMA guests (study 003).

Pure: :mod:`.model` (the hand-off's typed values and the host report's
section), :mod:`.policy` (the CPU and per-node memory hand-off, study
003's ``balanced``) and :mod:`.flavor` (the extra specs that give a guest
the host's NUMA shape; the scheduler's ``FullNUMAFilter`` and
``nova-cacheaware flavor numa-full`` use it too). Adapters: :mod:`.shapes`
(the guest and host shapes read from domain XML and the topology) and
:mod:`.agent` (the capability's reconcile and its factory, the
``nova_cacheaware.agent.capabilities`` entry point).
"""
