"""A state relay for the RabbitMQ run, in its own process.

``python -m benchmarks.region_relay_proc --url URL --source X --sink Y
--topic T --pool P --name N`` runs the project's
:class:`~nova_cacheaware.relay.service.StateRelay` (the service's own
code, built here on the run's exchanges instead of from a file) and
answers one command per stdin line with one JSON line on stdout:

* ``probe``: its CPU seconds (``getrusage``), messages and bytes sent
  per event type, the table's counters;
* ``stop``: stops the relay (last digest sent) and probes once more.
"""

import argparse
import json
import resource
import sys
import time

from benchmarks import region_listener
from nova_cacheaware.policy import state_relay
from nova_cacheaware.relay import service


def _cpu_s():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def probe(relay):
    """What the parent reads at a window's ends."""
    with relay._lock:
        sent = {k: list(v) for k, v in relay.sent.items()}
        counts = {'%s/%s' % k: v for k, v in relay.table.counts.items()}
    return {'cpu_s': _cpu_s(), 'at': time.monotonic(), 'sent': sent,
            'counts': counts, 'hosts': len(relay.table)}


def main(argv=None):
    """Relay until told to stop (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ('url', 'source', 'sink', 'topic', 'pool', 'name'):
        parser.add_argument('--' + name, required=True)
    parser.add_argument('--resync', type=float, default=30.0)
    parser.add_argument('--every', type=int, default=3)
    parser.add_argument('--digest', type=float, default=1.0)
    parser.add_argument('--max-delay', type=float, default=0.5)
    args = parser.parse_args(argv)
    table = state_relay.RelayTable(state_relay.Rules(
        resync_window_s=args.resync, full_state_every=args.every),
        args.name)
    relay = service.StateRelay(
        region_listener.transport(args.url, args.source),
        region_listener.transport(args.url, args.sink), table,
        args.topic, args.topic, args.pool,
        digest_interval_s=args.digest, stats_interval_s=0,
        max_state_delay_s=args.max_delay)
    relay.start()
    print(json.dumps({'ready': True}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == 'probe':
            print(json.dumps(probe(relay)), flush=True)
        elif command == 'stop':
            break
    relay.stop()
    print(json.dumps(probe(relay)), flush=True)


if __name__ == '__main__':
    main()
