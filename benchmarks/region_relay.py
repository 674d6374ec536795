"""The region through state relays, against direct mode, on RabbitMQ.

``python benchmarks/region_relay.py --out FILE`` runs 1 000 hosts x 200
VMs at a 1 s period (the message rate of 10 000 hosts at 10 s, as
:mod:`benchmarks.region_bus`) with real agents' publishers sending on a
"cell" exchange. In the same run, on the same messages:

* **direct**: a scheduler listener process
  (:mod:`benchmarks.region_listener`, the project's listener and cache)
  reads the cell exchange on its own queue, as schedulers do without a
  relay;
* **relayed**: ``--relays`` relay processes
  (:mod:`benchmarks.region_relay_proc`, the project's ``StateRelay``)
  share one queue on the cell exchange and send to an "API" exchange,
  where a second listener process reads on its own queue.

Both exchanges are on one RabbitMQ vhost: a cell's bus and the API bus
cost a consumer the same. Per listener: CPU (``getrusage``), AMQP bytes
read, deliveries and staleness (a change here to the listener's cache
storing the state that carries it); per relay: CPU and what it sent.
"""

import argparse
import contextlib
import json
import os
import sys
import time
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import common  # noqa: E402
from benchmarks import region_bus  # noqa: E402
from benchmarks import region_hosts  # noqa: E402
from benchmarks import region_sim as sim  # noqa: E402
from nova_cacheaware.contracts import state_digest  # noqa: E402
from nova_cacheaware.contracts import state_wire  # noqa: E402


class RelayProcess(region_bus.ChildProcess):
    """A :mod:`benchmarks.region_relay_proc` child and its commands.

    Its probe: CPU seconds, sent per event type, the table's counters.
    """

    def __init__(self, url, source, sink, topic, pool, name, resync_s,
                 every, digest_s, max_delay_s):
        super().__init__('relay %s' % name, 'benchmarks.region_relay_proc', [
            '--url', url, '--source', source, '--sink', sink,
            '--topic', topic, '--pool', pool, '--name', name,
            '--resync', str(resync_s), '--every', str(every),
            '--digest', str(digest_s), '--max-delay', str(max_delay_s)])

    def stop(self):
        """Stop it (its last digest sent); a last probe."""
        out = self._ask('stop')
        self.proc.wait(timeout=60)
        return out


def _sent(before, after, event):
    a = before['sent'].get(event, [0, 0])
    b = after['sent'].get(event, [0, 0])
    return b[0] - a[0], b[1] - a[1]


def relay_figures(before, after, seconds):
    """Per relay and together: CPU, forwarded states, digests (per s)."""
    out = {'relays': [], 'counts': {}}
    for a, b in zip(before, after):
        # Forwarded states ride in the digests.
        states = sum(b['counts'].get(k, 0) - a['counts'].get(k, 0)
                     for k in ('state/forwarded', 'state/forwarded_1x'))
        digests = _sent(a, b, state_digest.DIGEST_EVENT)
        out['relays'].append({
            'cores': round((b['cpu_s'] - a['cpu_s']) / seconds, 4),
            'states_per_s': round(states / seconds, 2),
            'digests_per_s': round(digests[0] / seconds, 2),
            'digest_bytes_per_msg': round(digests[1] / max(1, digests[0])),
            'hosts': b['hosts']})
        for key, value in b['counts'].items():
            out['counts'][key] = (out['counts'].get(key, 0) + value
                                  - a['counts'].get(key, 0))
    out['cores_total'] = round(sum(r['cores'] for r in out['relays']), 4)
    out['states_per_s'] = round(sum(r['states_per_s']
                                    for r in out['relays']), 2)
    out['digests_per_s'] = round(sum(r['digests_per_s']
                                     for r in out['relays']), 2)
    return out


def listener_figures(got, seconds, latency):
    """A listener's cores, deliveries and bytes per second, staleness."""
    return {'cores': round(got['cpu_s'] / seconds, 4),
            'deliveries_per_s': round(got['deliveries'] / seconds, 2),
            'us_per_delivery': round(got['cpu_s'] / max(
                1, got['deliveries']) * 1e6, 1),
            'wire_mb_per_s': round(got['bytes'] / seconds / 1e6, 4),
            'stored_per_s': round(got['stored'] / seconds, 2),
            'latency': latency}


@contextlib.contextmanager
def compact_memo(memo):
    """``state_wire.to_compact`` memoised per host and change, here only.

    The agents' side is the benchmark's load, not what it measures: at
    1 000 hosts a second, the compact form of every 200-VM state at every
    pass (the publisher compares it with the last one sent) costs the
    publisher process about half a core, and a publisher behind its
    schedule stretches the window (and the relays' digests per period).
    The memo returns the same content for an unchanged host (a copy with
    this state's timestamp): the messages are those the real function
    gives. Listeners and relays run in their own processes, unpatched.
    """
    real = state_wire.to_compact
    held = {}

    def memoised(state):
        sim = memo.current
        key = (state.host, sim.changes if sim is not None else None)
        doc = held.get(state.host)
        if doc is None or doc[0] != key:
            doc = (key, real(state))
            held[state.host] = doc
        return dict(doc[1], timestamp=state_wire.timestamps.format_time(
            state.timestamp))

    with mock.patch.object(state_wire, 'to_compact', memoised):
        yield


def run_relay(hosts, vms, seed, relays=2, every=0, window_periods=90,
              digest_s=1.0, warmup_periods=60, url=region_bus.RABBIT_URL,
              period_s=1.0, max_delay_s=0.2, storm_periods=10):
    """The whole run; the figures (see the module docstring).

    After the agents' start (one resync interval), ``warmup_periods``
    unmeasured periods: the relays' tables fill (each relay forwards the
    first state it sees of every host) before the steady window.
    """
    sims = region_hosts.build(hosts, vms, seed)
    names = region_bus.run_names()
    cell = dict(names, exchange=names['exchange'] + '-cell',
                pool=names['pool'] + '-direct')
    api = dict(names, exchange=names['exchange'] + '-api',
               pool=names['pool'] + '-relayed')
    relay_pool = names['pool'] + '-relay'
    run = region_bus.BusRun(sims, cell, url, period_s, seed)
    ttl = sim.TTL_S * period_s / sim.PERIOD_S
    listeners, procs = [], []
    try:
        with run.memo.installed(), compact_memo(run.memo):
            run.prebuild()
            listeners = [region_bus.ListenerProcess(n, 'default', url, ttl)
                         for n in (cell, api)]
            procs = [RelayProcess(url, cell['exchange'], api['exchange'],
                                  names['topic'], relay_pool,
                                  'relay-%d' % i, run.cadence.resync_s,
                                  every, digest_s, max_delay_s)
                     for i in range(relays)]
            first = region_bus.start_agents(run)
            for index in range(first, first + warmup_periods):
                run.period(index, False)
            first += warmup_periods
            before = [p.probe() for p in procs]
            wall = time.monotonic()
            steady = region_bus.window(run, listeners, first,
                                       window_periods, True)
            wall = time.monotonic() - wall
            after = [p.probe() for p in procs]
            storm = _storm(run, listeners, first + window_periods,
                           storm_periods)
        # The last states of the window reach the listeners.
        time.sleep(2.0)
        stored = [lst.stop() for lst in listeners]
        for p in procs:
            p.stop()
    finally:
        for child in listeners + procs:
            child.kill()
        run.transport.cleanup()
        backlog = region_bus.cleanup_rabbit(
            url, names, [lst.pool for lst in listeners] + [relay_pool])
        region_bus.cleanup_rabbit(url, cell, [])
        region_bus.cleanup_rabbit(url, api, [])
    # Rates per period of the schedule (one period: one second of the
    # 10 000-host region), and per second of wall clock: they differ when
    # the publisher ran behind its schedule (pass_lag_s).
    seconds = steady['seconds']
    sent = steady['sent']
    out = {'hosts': hosts, 'vms': vms, 'period_s': period_s,
           'window_wall_s': round(wall, 1),
           'heartbeat_s': run.cadence.heartbeat_s,
           'resync_s': run.cadence.resync_s, 'window_s': seconds,
           'relays': relays, 'full_state_every': every,
           'warmup_s': warmup_periods * period_s,
           'digest_interval_s': digest_s,
           'max_state_delay_s': max_delay_s,
           'agents_sent': sent,
           'agents_messages_per_s': round(sum(
               v['messages'] for v in sent.values()) / seconds, 2),
           'default_queue_backlog': backlog,
           'pass_lag_s': {'p50': region_bus._round(region_bus._pct(
               run.lag, 0.5)), 'p99': region_bus._round(region_bus._pct(
                   run.lag, 0.99))}}
    for mode, got, records in zip(('direct', 'relayed'),
                                  steady['listeners'], stored):
        out[mode] = listener_figures(got, seconds,
                                     region_bus._latency(run, records))
        out[mode]['cores_per_wall_s'] = round(got['cpu_s'] / wall, 4)
        if storm is not None:
            out[mode]['storm'] = storm_figures(
                run, storm, got['cpu_s'] / seconds, mode, records)
    out['relay'] = relay_figures(before, after, seconds)
    out['relay']['cores_total_per_wall_s'] = round(
        sum(b['cpu_s'] - a['cpu_s'] for a, b in zip(before, after)) / wall,
        4)
    return out


def _storm(run, listeners, first, periods):
    """Every agent restarts at once; the window after it (or None)."""
    if not periods:
        return None
    run.started_storm = run.started + first * run.period_s
    run.restart(run.sims)
    generations = {s.name: run.publishers[s.name].last.generation
                   for s in run.sims}
    return dict(region_bus.window(run, listeners, first, periods),
                generations=generations)


def storm_figures(run, storm, steady_cores, mode, records):
    """A listener's storm: CPU above its steady state, time to drain.

    ``extra_cores_per_period``: the storm's CPU beyond the steady state's
    over the window, per period (the storm is one period's worth of
    states).
    """
    index = ('direct', 'relayed').index(mode)
    cpu = storm['listeners'][index]['cpu_s']
    extra = cpu - steady_cores * storm['seconds']
    drain = region_bus._drain(run, records, storm['generations'])
    sent = (max(run.storm_sent.values()) - run.started_storm
            if run.storm_sent else None)
    return {'cpu_s': round(cpu, 3), 'window_s': storm['seconds'],
            'extra_cores_per_period': round(extra / run.period_s, 4),
            # When the agents had sent every new state: the drain's floor.
            'last_sent_s': region_bus._round(sent),
            'drain_s': drain,
            'drain_periods': (None if drain is None
                              else round(drain / run.period_s, 2))}


def goals(figures):
    """The per-worker goals, relayed against direct."""
    rows = []
    for goal, key, limit in (('CPU per scheduler worker, cores', 'cores',
                              0.05),
                             ('bus per scheduler worker, MB/s (AMQP)',
                              'wire_mb_per_s', 1.0)):
        got = figures['relayed'][key]
        rows.append({'goal': goal, 'limit': limit, 'figure': got,
                     'met': got <= limit,
                     'direct': figures['direct'][key]})
    p99 = figures['relayed']['latency']['staleness_p99_s']
    rows.append({'goal': 'staleness p99, s (scaled period + 1 s)',
                 'limit': 2.0, 'figure': p99,
                 'met': None if p99 is None else p99 <= 2.0,
                 'direct': figures['direct']['latency'][
                     'staleness_p99_s']})
    if 'storm' in figures['relayed']:
        for goal, key, limit in (
                ('resync storm, cores per period (extra)',
                 'extra_cores_per_period', 0.5),
                ('resync storm drained, periods', 'drain_periods', 2.0)):
            got = figures['relayed']['storm'][key]
            rows.append({'goal': goal, 'limit': limit, 'figure': got,
                         'met': None if got is None else got <= limit,
                         'direct': figures['direct']['storm'][key]})
    return rows


def parse_args(argv):
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--hosts', type=int, default=1000)
    p.add_argument('--vms', type=int, default=200)
    p.add_argument('--seed', type=int, default=29)
    p.add_argument('--relays', type=int, default=2)
    p.add_argument('--every', type=int, default=0,
                   help='[state_relay] full_state_every')
    p.add_argument('--window', type=int, default=90,
                   help='steady window, periods (s)')
    p.add_argument('--warmup', type=int, default=60,
                   help='periods between the agents\' start and the window')
    p.add_argument('--digest', type=float, default=1.0,
                   help='[state_relay] digest_interval_s')
    p.add_argument('--max-delay', type=float, default=0.5,
                   help='[state_relay] max_state_delay_s')
    p.add_argument('--storm', type=int, default=10,
                   help='periods after every agent restarts at once '
                        '(0: no storm)')
    p.add_argument('--out')
    return p.parse_args(argv)


def main(argv=None):
    """Run, print the goals, write ``--out``."""
    args = parse_args(argv)
    load_before = os.getloadavg()
    started = time.monotonic()
    figures = run_relay(args.hosts, args.vms, args.seed, args.relays,
                        args.every, args.window, args.digest,
                        args.warmup, max_delay_s=args.max_delay,
                        storm_periods=args.storm)
    doc = {'benchmark': 'region_relay',
           'command': ' '.join(['.venv/bin/python',
                                'benchmarks/region_relay.py']
                               + list(sys.argv[1:] if argv is None
                                      else argv)),
           'date': common.now(), 'machine': common.machine(),
           'python': sys.version.split()[0],
           'loadavg_before': [round(x, 2) for x in load_before],
           'loadavg_after': [round(x, 2) for x in os.getloadavg()],
           'wall_s': round(time.monotonic() - started, 1),
           'rabbit': figures, 'goals': goals(figures)}
    for row in doc['goals']:
        print('%-42s relayed %-8s direct %-8s <= %-5s %s' % (
            row['goal'], row['figure'], row['direct'], row['limit'],
            {True: 'met', False: 'MISSED', None: '-'}[row['met']]))
    print(json.dumps(figures['relay'], indent=1))
    if args.out:
        common.write_json(args.out, doc)
    return 0


if __name__ == '__main__':
    sys.exit(main())
