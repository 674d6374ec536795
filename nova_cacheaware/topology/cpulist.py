"""Linux cpulist strings ("0-3,8,10-11") to sorted CPU tuples and back."""

from nova_cacheaware import exception


def parse_cpulist(text):
    """Parse a kernel cpulist such as ``"0-3,8"`` into a sorted tuple.

    An empty string (an empty set, e.g. a memory-only NUMA node) gives ``()``.
    Raises :class:`InvalidInput` on anything else that is not a cpulist.
    """
    text = text.strip()
    if not text:
        return ()
    cpus = set()
    for part in text.split(','):
        part = part.strip()
        lo, sep, hi = part.partition('-')
        try:
            first = int(lo)
            last = int(hi) if sep else first
        except ValueError:
            raise exception.InvalidInput(
                reason='%r is not a CPU list' % text) from None
        if first < 0 or last < first:
            raise exception.InvalidInput(
                reason='%r is not a CPU list' % text)
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def format_cpulist(cpus):
    """Format CPU ids as a compact cpulist (``[0,1,2,5]`` -> ``0-2,5``)."""
    ids = sorted(set(cpus))
    ranges = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        ranges.append(str(ids[i]) if i == j else '%d-%d' % (ids[i], ids[j]))
        i = j + 1
    return ','.join(ranges)
