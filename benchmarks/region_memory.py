"""Memory of a scheduler cache holding the region's states (one format).

``python -m benchmarks.region_memory --bodies FILE --hosts N`` reads one
message body per line (each host's newest state, as the bus carried it,
in one payload version), hands them to the real endpoint and cache under
``tracemalloc``, then hands them all once more (a resync: every state
replaced by an equal one, as the steady state has it), and prints one
JSON document. Run in its own process per format, so the formats'
allocations never mix. With fewer bodies than ``N`` (the 1.5 sample),
the figures are scaled to ``N`` hosts (a state's memory does not depend
on the other hosts').

The cache's index of instances that appeared lately (``_arrived``) is
reported apart: its table, and the uuid strings that only it keeps alive
(a dict keeps the first key object of an equal key: after a resync the
index holds the first state's strings and the state its own).
"""

import argparse
import json
import os
import sys
import tracemalloc

from nova_cacheaware import notifications
from nova_cacheaware.scheduler import state_cache

MIB = 1024.0 * 1024.0


def feed(endpoint, bodies):
    """Decode and dispatch every body, as the listener does."""
    for body in bodies:
        message = json.loads(json.loads(body)['oslo.message'])
        endpoint.info({}, message['publisher_id'], message['event_type'],
                      message['payload'],
                      {'message_id': message['message_id'],
                       'timestamp': message['timestamp']})


def index_share(cache):
    """``(table bytes, bytes of its uuid strings)``: where instances appeared.

    The cache remembers only instances that appeared lately
    (``HostStateCache.located``), not every instance of the region.
    """
    arrived = cache._arrived
    return (sys.getsizeof(arrived),
            sum(sys.getsizeof(k) for k in arrived))


def top_lines(snapshot, count=6):
    """The source lines that hold the most traced memory (MiB)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = []
    for stat in snapshot.statistics('lineno')[:count]:
        frame = stat.traceback[0]
        name = frame.filename
        if name.startswith(root):
            name = os.path.relpath(name, root)
        else:
            name = os.path.basename(name)
        out.append({'where': '%s:%d' % (name, frame.lineno),
                    'mib': round(stat.size / MIB, 2)})
    return out


def measure(bodies, hosts):
    """The cache's traced memory, first fill and after a resync."""
    cache = state_cache.HostStateCache(180)
    endpoint = notifications.HostStateEndpoint(cache)
    scale = hosts / float(len(bodies))
    tracemalloc.start()
    feed(endpoint, bodies)
    first = tracemalloc.get_traced_memory()[0]
    feed(endpoint, bodies)
    steady = tracemalloc.get_traced_memory()[0]
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    table, only = index_share(cache)
    return {
        'hosts': hosts, 'bodies': len(bodies),
        'instances_indexed': len(cache._arrived),
        'first_fill_mib': round(first * scale / MIB, 1),
        'after_resync_mib': round(steady * scale / MIB, 1),
        'index_table_mib': round(table * scale / MIB, 1),
        'index_only_strings_mib': round(only * scale / MIB, 1),
        'per_host_kib': round(steady / len(bodies) / 1024.0, 2),
        'top_lines_unscaled': top_lines(snapshot),
    }


def main(argv=None):
    """Measure one file of bodies (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--bodies', required=True)
    parser.add_argument('--hosts', type=int, required=True)
    args = parser.parse_args(argv)
    with open(args.bodies) as f:
        bodies = [line.rstrip('\n') for line in f if line.strip()]
    print(json.dumps(measure(bodies, args.hosts)))


if __name__ == '__main__':
    main()
