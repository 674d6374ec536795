"""What a scheduler worker's state listener costs, per message and idle.

``python benchmarks/listener_cost.py --out FILE`` starts the project's
listener (:mod:`benchmarks.region_listener`, a real
:class:`~nova_cacheaware.scheduler.state_cache.HostStateCache` behind
oslo.messaging on the real RabbitMQ) in its own process and sends it, on a
run-unique exchange, real 2.0 messages of simulated 16-domain hosts:

* nothing (the listener's idle cost);
* heartbeats, spread evenly at several rates (cost per delivery with next
  to no parsing);
* full states of 200-VM hosts, each a new generation, spread evenly at the
  same rates (what parsing and storing add);
* relay digests of ``--digest-entries`` hosts each, spread evenly;
* the same states sent back to back once a second (the same rate in one
  wake-up per second: what a relay that sends its states together would
  cost the worker).

Per step: the listener's CPU seconds per second (``getrusage`` in the
child) over ``--seconds``; the fit of the spread steps gives the cost of
one delivery and the idle cost. Answers where a worker's CPU goes at a
region's rates, to choose what to change.
"""

import argparse
import json
import os
import sys
import time

import oslo_messaging

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks import common  # noqa: E402
from benchmarks import region_bus  # noqa: E402
from benchmarks import region_hosts  # noqa: E402
from benchmarks import region_listener  # noqa: E402
from benchmarks import region_sim as sim  # noqa: E402
from nova_cacheaware.contracts import host_state  # noqa: E402
from nova_cacheaware.contracts import state_digest  # noqa: E402
from nova_cacheaware.contracts import state_wire  # noqa: E402

RATES = (2, 8, 32)


def real_messages(hosts, vms, seed):
    """``(states, heartbeats)``: one real 2.0 message of each per host."""
    sims = region_hosts.build(hosts, vms, seed)
    memo = sim.AgentMemo()
    region = sim.Region(sims, '2.0', memo)
    region.restart(sims)
    with memo.installed():
        region.agent_pass()
        states = region.transport.take()
        region.clock.now += sim.HEARTBEAT_S + 1
        region.agent_pass()
        beats = [m for m in region.transport.take()
                 if m['event_type'] == state_wire.HEARTBEAT_EVENT]
    return states, beats


def digests(beats, entries, count=8):
    """``count`` relay digest messages of ``entries`` hosts each.

    Their entries are filled in when sent (:meth:`Sender.send`): the
    hosts whose states were sent, at their newest generation, as a relay
    confirms them (a host the listener lacks would make it send wants).
    """
    return [dict(beats[0], event_type=state_digest.DIGEST_EVENT,
                 payload={'entries': entries, 'relay': 'relay-%d' % k})
            for k in range(count)]


class Sender:
    """Sends messages on the run's exchange, each state a new generation."""

    def __init__(self, url, names):
        self.transport = region_listener.transport(url, names['exchange'])
        self.topic = names['topic']
        self.generation = 10 ** 12
        #: ``{host: generation}`` of the states sent.
        self.newest = {}

    def send(self, message):
        """Put ``message`` on the bus (a state with a new generation)."""
        if message['event_type'] == host_state.EVENT_TYPE:
            self.generation += 1
            self.newest[message['payload']['host']] = self.generation
            message = dict(message, payload=dict(
                message['payload'], generation=self.generation))
        elif message['event_type'] == state_digest.DIGEST_EVENT:
            message = dict(message, payload=self._digest(message['payload']))
        target = oslo_messaging.Target(topic='%s.info' % self.topic)
        self.transport._send_notification(target, {}, message, version=2.0)

    def _digest(self, spec):
        hosts = list(self.newest.items())
        listed = tuple(
            state_digest.Entry(host=h, generation=g, age_ms=i % 1000,
                               agent_healthy=True)
            for i, (h, g) in enumerate(
                hosts[i % len(hosts)] for i in range(spec['entries'])))
        return state_digest.digest_payload(
            state_digest.Digest(relay=spec['relay'], entries=listed))


def run_step(listener, sender, messages, rate, seconds, together):
    """Send ``rate`` messages a second for ``seconds``; cores used."""
    before = listener.probe()
    start = time.monotonic()
    sent = 0
    for second in range(int(seconds)):
        if together:
            for _ in range(rate):
                sender.send(messages[sent % len(messages)])
                sent += 1
        else:
            for k in range(rate):
                at = start + second + k / rate
                delay = at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                sender.send(messages[sent % len(messages)])
                sent += 1
        delay = start + second + 1 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    time.sleep(0.5)
    after = listener.probe()
    wall = after['at'] - before['at']
    return {'rate': rate, 'together': together, 'sent': sent,
            'delivered': after['deliveries'] - before['deliveries'],
            'cores': round((after['cpu_s'] - before['cpu_s']) / wall, 5)}


def fit(rows):
    """Least squares ``cores = idle + per_delivery * rate``."""
    xs = [r['rate'] for r in rows]
    ys = [r['cores'] for r in rows]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return {'us_per_delivery': round(slope * 1e6, 1),
            'idle_cores': round(my - slope * mx, 5)}


def main(argv=None):
    """Run every step; print and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--url', default=region_bus.RABBIT_URL)
    parser.add_argument('--hosts', type=int, default=64)
    parser.add_argument('--vms', type=int, default=200)
    parser.add_argument('--seconds', type=float, default=20)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--digest-entries', type=int, default=100)
    parser.add_argument('--rates', type=int, nargs='+', default=RATES,
                        help='messages per second of each step')
    parser.add_argument('--out')
    args = parser.parse_args(argv)
    started = time.time()
    load_before = os.getloadavg()
    states, beats = real_messages(args.hosts, args.vms, args.seed)
    names = region_bus.run_names()
    listener = region_bus.ListenerProcess(names, 'default', args.url, 1e9)
    sender = Sender(args.url, names)
    steps = []
    try:
        time.sleep(2)
        steps.append(dict(run_step(listener, sender, beats, 0,
                                   args.seconds, False), kind='idle'))
        for kind, messages in (('heartbeat', beats), ('state', states),
                               ('digest', digests(beats,
                                                  args.digest_entries))):
            for rate in args.rates:
                steps.append(dict(run_step(listener, sender, messages, rate,
                                           args.seconds, False), kind=kind))
        for rate in args.rates:
            steps.append(dict(run_step(listener, sender, states, rate,
                                       args.seconds, True), kind='state'))
    finally:
        listener.stop()
        sender.transport.cleanup()
        region_bus.cleanup_rabbit(args.url, names, [listener.pool])
    idle = steps[0]
    fits = {kind: fit([idle] + [s for s in steps if s['kind'] == kind
                                and not s['together']])
            for kind in ('heartbeat', 'state', 'digest')}
    state_bytes = sum(len(sim.wire_body(m)) for m in states) / len(states)
    result = {
        'benchmark': 'listener_cost', 'command': ' '.join(sys.argv),
        'date': common.now(), 'machine': common.machine(),
        'loadavg_before': load_before, 'loadavg_after': os.getloadavg(),
        'wall_s': round(time.time() - started, 1),
        'hosts': args.hosts, 'vms': args.vms, 'seconds': args.seconds,
        'state_body_bytes': round(state_bytes),
        'steps': steps, 'fit_spread': fits}
    print(json.dumps(result, indent=1))
    if args.out:
        common.write_json(args.out, result)
    return result


if __name__ == '__main__':
    main()
