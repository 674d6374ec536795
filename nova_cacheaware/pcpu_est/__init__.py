"""pCPU-Est (study 004): how many pCPUs a VM really gets, exactly.

Pure, and shared: the ``vcpu_sizing`` capability sizes guests with it,
the agent's live state carries its levels, the scheduler's weigher reads
a new instance's share from them, and ``nova-cacheaware pcpu-est``
replays it. :mod:`.estimate` (the max-min fair estimate), :mod:`.network`
(the class/atom network built from the vCPUs' affinities), :mod:`.flow`
(its exact max-flow back ends) and :mod:`.headroom` (a new floating
instance's share in O(log levels)).
"""
