"""The ``vcpu_sizing`` capability: the CPU a VM really gets (studies 001, 004).

Pure: :mod:`.model` (the typed values, and the spin-storm detector's
replay JSON), :mod:`.policy` (the sizing decisions, on
:mod:`nova_cacheaware.pcpu_est`) and :mod:`.spin_storm` (is a VM in a
lock-holder-preemption storm). Adapters: :mod:`.spin` (vCPU spinning,
measured), :mod:`.storm_states` (the detector's per-VM states across
passes), :mod:`.view` (what the capability reads and writes on domains)
and :mod:`.agent` (the capability's reconcile and its factory, the
``nova_cacheaware.agent.capabilities`` entry point).
``nova-cacheaware pcpu-est`` and ``spin-storm`` replay its decisions.
"""
