"""Empty, Clean and Dirty: a cache domain's state, defined once.

Study 000's three states of a cache domain by the number of memory-bound
VMs it holds. The names are a wire contract (the live-state payload's
``state`` field) as well as the planner's vocabulary.
"""

EMPTY, CLEAN, DIRTY = 'empty', 'clean', 'dirty'
#: Every state, in order of how many memory-bound VMs the domain holds.
DOMAIN_STATES = (EMPTY, CLEAN, DIRTY)


def cache_state(memory_vms):
    """Empty (0), Clean (1) or Dirty (2+) for a count of memory-bound VMs."""
    if memory_vms <= 0:
        return EMPTY
    return CLEAN if memory_vms == 1 else DIRTY
