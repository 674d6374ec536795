"""Sets of CPU ids in the JSON documents: lists of ids or cpulist strings.

Leaf module: standard library, :mod:`.limits` and :mod:`.schema` only.
"""

import collections
import functools

from nova_cacheaware.contracts import limits
from nova_cacheaware.contracts import schema


@functools.lru_cache(maxsize=4096)
def cpu_ranges(text):
    """The sorted tuple of a cpulist string (``"0-15,32-47"``), or None.

    None when ``text`` is no cpulist, names a CPU outside ``0 ..
    MAX_CPUS - 1`` or names one twice. The form of Nova's
    ``cpu_shared_set`` and the kernel's; ``""`` is the empty set.
    Memoised: documents repeat the same few sets for thousands of vCPUs.
    """
    cpus = []
    for part in text.split(',') if text else ():
        lo, sep, hi = part.partition('-')
        if not (lo.isascii() and lo.isdigit()
                and (not sep or (hi.isascii() and hi.isdigit()))):
            return None
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first or last >= limits.MAX_CPUS:
            return None
        cpus.extend(range(first, last + 1))
    if len(set(cpus)) != len(cpus):
        return None
    return tuple(sorted(cpus))


class CpuList:
    """A non-repeating list of CPU ids (``0 .. MAX_CPUS - 1``): a sorted tuple.

    Written as a JSON list of ids or as a cpulist string (``"0-15,32-47"``,
    :func:`cpu_ranges`). ``check_fast`` memoises the lists of one
    document: hosts repeat the same affinity (the whole host, a node, a
    domain) for many vCPUs, so each distinct list is checked and sorted
    once, with C-level builtins.
    """

    def check(self, value, where):
        """The sorted tuple of ``value``, or :class:`SchemaError`."""
        if isinstance(value, str):
            cpus = cpu_ranges(value)
            if cpus is None:
                raise schema.SchemaError(
                    where, '%r is not a CPU list such as "0-15,32-47" of '
                    'distinct pCPU numbers 0..%d'
                    % (value, limits.MAX_CPUS - 1))
            return cpus
        if not isinstance(value, list):
            raise schema.SchemaError(where, 'must be a list of pCPU numbers')
        for p in value:
            if not limits.is_cpu_id(p):
                raise schema.SchemaError(
                    where, '%r is not a pCPU number (an integer 0..%d)'
                    % (p, limits.MAX_CPUS - 1))
        if len(set(value)) != len(value):
            dup = sorted(p for p, n in collections.Counter(value).items()
                         if n > 1)
            raise schema.SchemaError(where, 'duplicate pCPU(s) %s' % dup)
        return tuple(sorted(value))

    def check_fast(self, value, where, seen):
        """:meth:`check` with ``seen`` (a dict per document) as memo."""
        if type(value) is str:
            cpus = cpu_ranges(value)
            if cpus is not None:
                return cpus
            return self.check(value, where)
        if type(value) is list and value and set(map(type, value)) <= {int}:
            key = tuple(value)
            hit = seen.get(key)
            if hit is not None:
                return hit
            if (min(value) >= 0 and max(value) < limits.MAX_CPUS
                    and len(set(value)) == len(value)):
                seen[key] = result = tuple(sorted(value))
                return result
        return self.check(value, where)
