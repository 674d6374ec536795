"""The region over real oslo.messaging and RabbitMQ, rate-scaled.

``hosts`` agents (real publishers on one real notification transport, in
this process) publish at a period of ``period_s`` (1 s: 1 000 hosts then
send what 10 000 send at the agents' 10 s), with ``[agent]
state_heartbeat_s`` and ``state_resync_s`` scaled alike, so the message
rate and mix are the region's. Each agent passes at its own phase within
the period (real agents are not synchronised), and 1 % of the hosts
change per period at a random time. Agents start one by one over one
resync interval (spread phases), then the steady window is measured;
then every agent restarts at once (the storm).

Two listener processes (:mod:`benchmarks.region_listener`) read the
topic on their own queues: the project's listener and a batch listener.
Their CPU (``getrusage``) and the AMQP bytes they read are probed at the
window's ends. Staleness: when each change happened here against when a
listener's cache first stored the state that carries it.
"""

import json
import os
import random
import subprocess
import sys
import time
import uuid as uuid_mod

import kombu

from benchmarks import region_hosts
from benchmarks import region_listener
from benchmarks import region_sim as sim
from nova_cacheaware.agent import notify
from nova_cacheaware.contracts import state_wire
from nova_cacheaware.policy import state_cadence

RABBIT_URL = 'rabbit://guest:guest@127.0.0.1:5672/'
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kombu_url(url):
    """The kombu spelling of an oslo.messaging rabbit URL."""
    return 'amqp' + url[len('rabbit'):]


class ChildProcess:
    """A benchmark child process: one command line in, one JSON line out.

    ``module`` (run with ``-m``) answers a first line when ready, then one
    per command (``probe``, ``stop``). ``name`` says which child failed.
    """

    def __init__(self, name, module, args):
        self.name = name
        env = dict(os.environ, PYTHONPATH=ROOT)
        self.proc = subprocess.Popen(
            [sys.executable, '-m', module] + list(args),
            cwd=ROOT, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        self._ask(None)

    def _ask(self, command):
        if command is not None:
            self.proc.stdin.write(command + '\n')
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('%s exited (rc %s)'
                               % (self.name, self.proc.wait()))
        return json.loads(line)

    def probe(self):
        """The child's counters (CPU seconds and what it measures)."""
        return self._ask('probe')

    def kill(self):
        """End the child if it is still running (errors on the way)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class ListenerProcess(ChildProcess):
    """A :mod:`benchmarks.region_listener` child and its commands."""

    def __init__(self, names, mode, url, ttl):
        self.pool = '%s-%s' % (names['pool'], mode)
        super().__init__('listener %s' % self.pool,
                         'benchmarks.region_listener', [
                             '--url', url, '--exchange', names['exchange'],
                             '--topic', names['topic'], '--pool', self.pool,
                             '--mode', mode, '--ttl', str(ttl)])

    def stop(self):
        """Stop it; ``[(host, generation, stored at), ...]``."""
        out = self._ask('stop')['stored']
        self.proc.wait(timeout=30)
        return out


class CountingTransport:
    """The real transport, counting messages and body bytes per kind."""

    def __init__(self, real):
        self.real = real
        self.count = {'state': [0, 0], 'heartbeat': [0, 0]}

    def _send_notification(self, target, ctxt, message, version, retry=None):
        """Count ``message`` then send it for real."""
        kind = ('heartbeat' if message['event_type']
                == state_wire.HEARTBEAT_EVENT else 'state')
        self.count[kind][0] += 1
        self.count[kind][1] += len(sim.wire_body(message))
        self.real._send_notification(target, ctxt, message, version,
                                     retry=retry)

    def snapshot(self):
        """``{kind: [messages, body bytes]}`` so far."""
        return {k: list(v) for k, v in self.count.items()}

    def cleanup(self):
        """Release the real transport."""
        self.real.cleanup()


class BusRun:
    """Publishers, their timeline, and what the listeners saw."""

    def __init__(self, sims, names, url, period_s, seed):
        self.sims = sims
        self.period_s = period_s
        scale = period_s / sim.PERIOD_S
        self.cadence = state_cadence.Cadence(
            heartbeat_s=sim.HEARTBEAT_S * scale,
            resync_s=sim.RESYNC_S * scale)
        self.rounds = round(sim.RESYNC_S / sim.PERIOD_S)
        self.clock = sim.SimClock()
        self.memo = sim.AgentMemo()
        self.transport = CountingTransport(
            region_listener.transport(url, names['exchange']))
        self.topic = names['topic']
        self.publishers = {}
        self.rng = random.Random(seed)
        self.changes = []     # (host, changed at, passed at, generation)
        self._pending = {}    # host -> changed at, until its next pass
        self.started = None
        self.started_storm = None
        #: How late the passes ran behind their schedule (s): the pacing
        #: is only the region's rate while this stays well below a period.
        self.lag = []
        #: When each agent's first pass after the storm's restart ran.
        self.storm_sent = {}

    def restart(self, sims):
        """New publishers for ``sims`` (agents started or restarted)."""
        for s in sims:
            self.publishers[s.name] = notify.NotificationStatePublisher(
                self.transport, s.name, self.topic, cadence=self.cadence,
                clock=self.clock)

    def period(self, index, record):
        """One period in real time: changes and phased passes."""
        start = self.started + index * self.period_s
        count = len(self.sims)
        events = [(start + i * self.period_s / count, 1, s)
                  for i, s in enumerate(self.sims)]
        changing = self.rng.sample(self.sims, max(1, count // 100))
        events += [(start + self.rng.random() * self.period_s, 0, s)
                   for s in changing]
        events.sort(key=lambda e: (e[0], e[1]))
        for at, is_pass, s in events:
            delay = at - time.monotonic()
            if delay > 0.001:
                time.sleep(delay)
            if not is_pass:
                s.change()
                if record:
                    self._pending.setdefault(s.name, time.monotonic())
                continue
            publisher = self.publishers.get(s.name)
            if publisher is None:
                continue
            if record:
                self.lag.append(max(0.0, time.monotonic() - at))
            self.clock.now = index * self.period_s
            self.memo.publish(publisher, s)
            if self.started_storm is not None:
                self.storm_sent.setdefault(s.name, time.monotonic())
            changed = self._pending.pop(s.name, None)
            if changed is not None:
                self.changes.append((s.name, changed, time.monotonic(),
                                     publisher.last.generation))

    def prebuild(self):
        """Every host's first state, before the clock starts."""
        for s in self.sims:
            self.memo.current = s
            self.memo(None, s.name)


def window(run, listeners, first, periods, record=False):
    """Run ``periods`` periods from ``first``; what each side counted."""
    sent = run.transport.snapshot()
    before = [lst.probe() for lst in listeners]
    for index in range(first, first + periods):
        run.period(index, record)
    after = [lst.probe() for lst in listeners]
    now = run.transport.snapshot()
    seconds = periods * run.period_s
    return {
        'seconds': seconds,
        'sent': {k: {'messages': now[k][0] - sent[k][0],
                     'body_bytes': now[k][1] - sent[k][1]} for k in now},
        'listeners': [{k: b[k] - a[k] for k in
                       ('cpu_s', 'bytes', 'frames', 'deliveries', 'stored')}
                      for a, b in zip(before, after)],
    }


def cleanup_rabbit(url, names, pools):
    """Delete this run's queues and exchange; the unconsumed backlog.

    Returns the messages left in the publisher's default queue (oslo.
    messaging declares ``<topic>.info`` so that no notification is lost
    while nobody listens; nothing consumes it).
    """
    left = None
    with kombu.Connection(kombu_url(url)) as conn:
        channel = conn.channel()
        default = '%s.info' % names['topic']
        try:
            left = channel.queue_declare(default, passive=True).message_count
        except Exception:
            channel = conn.channel()
        for queue in list(pools) + [default]:
            channel.queue_delete(queue)
        channel.exchange_delete(names['exchange'])
    return left


def run_names():
    """Unique exchange, topic and pool prefix for one run."""
    tag = uuid_mod.uuid4().hex[:10]
    return {'exchange': 'cacheaware-region-%s' % tag,
            'topic': 'cacheaware_region_%s' % tag,
            'pool': 'cacheaware-region-%s' % tag}


def run_bus(hosts, vms, seed, url=RABBIT_URL, period_s=1.0,
            window_periods=30, quiet_periods=20, storm_periods=10,
            idle_s=5.0):
    """The whole RabbitMQ run; the figures (see :func:`summarize`).

    Phases: listeners idle (``idle_s``: oslo.messaging's polling costs CPU
    whatever the traffic), agents starting over one resync interval, the
    steady window, a window with no heartbeats between resyncs
    (``state_heartbeat_s`` = ``state_resync_s``: the fewest messages the
    cadence allows), then the storm.
    """
    sims = region_hosts.build(hosts, vms, seed)
    names = run_names()
    run = BusRun(sims, names, url, period_s, seed)
    listeners = []
    try:
        with run.memo.installed():
            run.prebuild()
            listeners = [ListenerProcess(names, mode, url, sim.TTL_S
                                         * period_s / sim.PERIOD_S)
                         for mode in ('default', 'batch')]
            idle = _idle(listeners, idle_s)
            phases = _phases(run, listeners, window_periods, quiet_periods,
                             storm_periods)
        stored = [lst.stop() for lst in listeners]
    finally:
        for lst in listeners:
            lst.kill()
        run.transport.cleanup()
        backlog = cleanup_rabbit(url, names, [lst.pool for lst in listeners])
    out = summarize(run, phases['steady'], phases['storm'], stored,
                    phases['storm_gen'], backlog)
    for mode, cores, quiet in zip(('default', 'batch'), idle,
                                  phases['quiet']['listeners']):
        out['listeners'][mode]['idle_cores'] = cores
        out['listeners'][mode]['no_heartbeats'] = {
            'cores': round(quiet['cpu_s'] / phases['quiet']['seconds'], 4),
            'deliveries': quiet['deliveries']}
    out['no_heartbeats_sent'] = phases['quiet']['sent']
    return out


def start_agents(run):
    """Agents start one by one over one resync interval; the next period."""
    run.started = time.monotonic() + 0.2
    count = len(run.sims)
    for index in range(run.rounds):
        run.restart([s for i, s in enumerate(run.sims)
                     if i * run.rounds // count == index])
        run.period(index, False)
    return run.rounds


def _phases(run, listeners, window_periods, quiet_periods, storm_periods):
    """Start, steady window, quiet window, storm (see :func:`run_bus`)."""
    first = start_agents(run)
    out = {'steady': window(run, listeners, first, window_periods, True)}
    first += window_periods
    quiet = state_cadence.Cadence(heartbeat_s=run.cadence.resync_s,
                                  resync_s=run.cadence.resync_s)
    for publisher in run.publishers.values():
        publisher.cadence = quiet
    out['quiet'] = window(run, listeners, first, quiet_periods)
    first += quiet_periods
    run.started_storm = run.started + first * run.period_s
    run.restart(run.sims)
    out['storm_gen'] = {s.name: run.publishers[s.name].last.generation
                        for s in run.sims}
    out['storm'] = window(run, listeners, first, storm_periods)
    return out


def _idle(listeners, seconds):
    """Each listener's cores while no message is sent."""
    before = [lst.probe() for lst in listeners]
    time.sleep(seconds)
    after = [lst.probe() for lst in listeners]
    return [round((b['cpu_s'] - a['cpu_s']) / (b['at'] - a['at']), 4)
            for a, b in zip(before, after)]


def _pct(values, q):
    """The ``q``-quantile of ``values`` (nearest rank), or None."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _latency(run, stored):
    """Staleness and delivery latency of the window's changes (s).

    A change never stored is ``superseded`` where a newer state of its
    host was (a state relay forwards a host's newest state only: one
    that came while an older one waited replaces it), else ``not_seen``.
    """
    first, newest = {}, {}
    for host, generation, at in stored:
        first.setdefault((host, generation), at)
        newest[host] = max(newest.get(host, generation), generation)
    stale, delivery, missing, superseded = [], [], 0, 0
    for host, changed, passed, generation in run.changes:
        at = first.get((host, generation))
        if at is None:
            if newest.get(host, generation) > generation:
                superseded += 1
            else:
                missing += 1
            continue
        stale.append(at - changed)
        delivery.append(at - passed)
    return {'changes': len(run.changes), 'not_seen': missing,
            'superseded': superseded,
            'staleness_p50_s': _round(_pct(stale, 0.5)),
            'staleness_p99_s': _round(_pct(stale, 0.99)),
            'staleness_max_s': _round(max(stale) if stale else None),
            'delivery_p50_s': _round(_pct(delivery, 0.5)),
            'delivery_p99_s': _round(_pct(delivery, 0.99))}


def _round(value, digits=4):
    return None if value is None else round(value, digits)


def _drain(run, stored, storm_gen):
    """Seconds from the storm's start until every host's new state."""
    done = {}
    for host, generation, at in stored:
        if generation > storm_gen.get(host, generation):
            done.setdefault(host, at)
    if len(done) < len(storm_gen):
        return None
    return round(max(done.values()) - run.started_storm, 3)


def summarize(run, steady, storm, stored, storm_gen, backlog):
    """The run's figures per listener, rates per second of the window."""
    seconds = steady['seconds']
    sent = steady['sent']
    messages = sum(v['messages'] for v in sent.values())
    body = sum(v['body_bytes'] for v in sent.values())
    out = {'hosts': len(run.sims), 'period_s': run.period_s,
           'heartbeat_s': run.cadence.heartbeat_s,
           'resync_s': run.cadence.resync_s, 'window_s': seconds,
           'sent': sent, 'messages_per_s': round(messages / seconds, 2),
           'body_mb_per_s': round(body / seconds / 1e6, 4),
           'default_queue_backlog': backlog, 'listeners': {},
           'storm_sent_s': _round(max(run.storm_sent.values())
                                  - run.started_storm
                                  if run.storm_sent else None),
           'pass_lag_s': {'p50': _round(_pct(run.lag, 0.5)),
                          'p99': _round(_pct(run.lag, 0.99)),
                          'max': _round(max(run.lag) if run.lag else None)}}
    for mode, got, hurried, records in zip(
            ('default', 'batch'), steady['listeners'], storm['listeners'],
            stored):
        out['listeners'][mode] = {
            'cores': round(got['cpu_s'] / seconds, 4),
            'us_per_delivery': round(got['cpu_s'] / max(1, got[
                'deliveries']) * 1e6, 1),
            'deliveries': got['deliveries'],
            'wire_mb_per_s': round(got['bytes'] / seconds / 1e6, 4),
            'framing_bytes_per_delivery': round(
                (got['bytes'] - body) / max(1, got['deliveries']), 1),
            'storm': {'cpu_s': round(hurried['cpu_s'], 3),
                      'window_s': storm['seconds'],
                      'drain_s': _drain(run, records, storm_gen)},
            'latency': _latency(run, records)}
    return out
