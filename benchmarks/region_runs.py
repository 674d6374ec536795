"""The in-process experiments of the region benchmark.

One :class:`Experiment` per (hosts, VMs): every host has a 2.0 publisher
(the default), a stratified sample of hosts also a 1.5 publisher (the
baseline: what agents sent before payload 2.0; its figures are scaled to
every host, since a 1.5 agent sends its whole state every period
whatever changed). Both see the same hosts and the same changes (1 % of
the hosts per period: a VM added, removed or moved), on one simulated
clock. Each version feeds its own scheduler cache.

Agents start one by one over one resync interval, so that their resyncs
and heartbeats are spread as in a region that has run for a while; the
steady windows follow. The storm restarts every agent at once.
"""

import gc
import json
import random
import statistics

from benchmarks import region_hosts
from benchmarks import region_sim as sim
from nova_cacheaware.agent import notify
from nova_cacheaware.contracts import state_wire

#: The most of one core a worker may spend on a resync storm (goal).
STORM_CORES = 0.5


def stratified(items, count):
    """Every k-th item, ``count`` of them (all when fewer)."""
    if count >= len(items):
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def summary(values, digits=6):
    """Mean, min and max of ``values``."""
    return {'mean': round(statistics.fmean(values), digits),
            'min': round(min(values), digits),
            'max': round(max(values), digits), 'n': len(values)}


def content(state):
    """A state's compact content, without timestamp and generation."""
    doc = state_wire.to_compact(state)
    doc.pop('timestamp')
    doc.pop('generation')
    return doc


class Experiment:
    """A region of simulated hosts and one scheduler worker per version."""

    def __init__(self, hosts, vms, seed, sample):
        self.sims = region_hosts.build(hosts, vms, seed)
        self.sample = stratified(self.sims, sample)
        self.memo = sim.AgentMemo(full_hosts={s.name for s in self.sample})
        self.clock = sim.SimClock()
        self.new = sim.Region(self.sims, '2.0', self.memo, clock=self.clock)
        self.old = sim.Region(self.sample, '1.5', self.memo,
                              clock=self.clock)
        self.rng = random.Random(seed + 1)
        self.rounds = round(sim.RESYNC_S / sim.PERIOD_S)
        # The simulated hosts are the agents' memory, not a scheduler's:
        # out of the collector's way (a full collection over them would
        # land in whichever timed delivery comes next).
        gc.collect()
        gc.freeze()

    def period(self, baseline=False, drop=None):
        """One period: 1 % of the hosts change, agents pass, delivery.

        Returns ``(2.0 tally, 1.5 tally or None, 2.0 agent CPU s)``.
        """
        for s in self.rng.sample(self.sims, max(1, len(self.sims) // 100)):
            s.change()
        new, agent_s = self.new.step(drop, keep_bodies=True)
        old = self.old.step(keep_bodies=True)[0] if baseline else None
        self.clock.now += sim.PERIOD_S
        return new, old, agent_s

    def warm_up(self):
        """Start the agents over one resync interval (spread phases)."""
        count = len(self.sims)
        for k in range(self.rounds):
            self.new.restart([s for i, s in enumerate(self.sims)
                              if i * self.rounds // count == k])
            last = k == self.rounds - 1
            if last:
                self.old.restart(self.sample)
            self.period(baseline=last)
        # The agents' memo and publishers are not a scheduler's either
        # (this freezes the cache's first states too: a small understatement
        # of the collector's share, noted in the docs).
        gc.collect()
        gc.freeze()

    def window(self, periods):
        """``periods`` steady periods: both versions' figures per second."""
        new, old = sim.Tally(), sim.Tally()
        per_period = []
        for _ in range(periods):
            a, b, _agent_s = self.period(baseline=True)
            new.add(a)
            old.add(b)
            per_period.append(a.cpu_s / sim.PERIOD_S)
        seconds = periods * sim.PERIOD_S
        scale = len(self.sims) / len(self.sample)
        return {'seconds': seconds,
                '2.0': _rates(new, seconds, 1.0),
                '2.0_max_period_cores': round(max(per_period), 6),
                '1.5': _rates(old, seconds, scale),
                '1.5_sample_hosts': len(self.sample)}

    def storm(self):
        """Every agent restarts at once: one period of full states."""
        self.new.restart(self.sims)
        tally = self.period()[0]
        return {'states': tally.states, 'cpu_s': round(tally.cpu_s, 4),
                'cores': round(tally.cpu_s / sim.PERIOD_S, 4),
                'state_us': round(tally.state_cpu_s / tally.states * 1e6, 2),
                'mb': round(tally.bytes / 1e6, 3),
                'drain_periods_at_half_core': round(
                    tally.cpu_s / (STORM_CORES * sim.PERIOD_S), 3)}

    def echo(self):
        """States per period for one resync interval after a storm.

        Generations of states sent together resync together: the storm
        comes back ``state_resync_s`` later, less the hosts that changed.
        """
        counts = [self.period()[0].states for _ in range(self.rounds + 1)]
        peak = max(range(len(counts)), key=counts.__getitem__)
        return {'states_per_period_after': counts,
                'peak_after_s': (peak + 1) * sim.PERIOD_S,
                'peak_fraction_of_hosts': round(counts[peak]
                                                / len(self.sims), 4)}

    def lost_updates(self, fraction, drop_periods):
        """Lose ``fraction`` of the messages for ``drop_periods`` periods.

        Then none; runs until one resync interval after the last loss.
        Per host whose cached state became wrong: seconds until
        ``cache.get()`` gives the agent's current state again, and what
        it gave meanwhile (host-periods).
        """
        rng = random.Random(len(self.sims) + 7)
        tracked, recovered = {}, []
        meanwhile = {'outdated_state': 0, 'none': 0}
        lost = {'state': 0, 'heartbeat': 0}
        for k in range(drop_periods + self.rounds + 1):
            drops = []

            def drop(message):
                gone = k < drop_periods and rng.random() < fraction
                if gone:
                    drops.append(message)
                return gone

            self.period(drop=drop)
            now = self.clock.now - sim.PERIOD_S
            for message in drops:
                beat = message['event_type'] == state_wire.HEARTBEAT_EVENT
                lost['heartbeat' if beat else 'state'] += 1
                host = message['payload']['host']
                if not beat and not self._right(host):
                    tracked.setdefault(host, now)
            for host, since in list(tracked.items()):
                if self._right(host):
                    recovered.append(now - since)
                    del tracked[host]
                elif self.new.cache.get(host) is None:
                    meanwhile['none'] += 1
                else:
                    meanwhile['outdated_state'] += 1
        return {'fraction': fraction, 'drop_periods': drop_periods,
                'lost_messages': lost, 'hosts_wrong': len(recovered)
                + len(tracked), 'not_recovered': len(tracked),
                'recovery_s': summary(recovered, 1) if recovered else None,
                'host_periods_meanwhile': meanwhile}

    def _right(self, host):
        got = self.new.cache.get(host)
        return got is not None and content(got) == content(
            self.memo.memo[host][1])


def _rates(tally, seconds, scale):
    """Per-second figures of a :class:`~.region_sim.Tally` (scaled)."""
    out = {'states_per_s': tally.states * scale / seconds,
           'heartbeats_per_s': tally.heartbeats * scale / seconds,
           'mb_per_s': tally.bytes * scale / seconds / 1e6,
           'cores': tally.cpu_s * scale / seconds,
           'state_us': (tally.state_cpu_s / tally.states * 1e6
                        if tally.states else None),
           'heartbeat_us': (tally.heartbeat_cpu_s / tally.heartbeats * 1e6
                            if tally.heartbeats else None),
           'state_body_bytes': (tally.state_bytes / tally.states
                                if tally.states else None),
           'heartbeat_body_bytes': (tally.heartbeat_bytes / tally.heartbeats
                                    if tally.heartbeats else None)}
    return {k: None if v is None else round(v, 6) for k, v in out.items()}


def sizes(sims):
    """Body and payload bytes of each kind's 2.0 and 1.5 states, heartbeat.

    Real publishers' messages: a state, then (one heartbeat interval
    later, nothing changed) the 2.0 heartbeat. On the wire a message is
    its body (:func:`.region_sim.wire_body`) plus AMQP framing (measured
    in the RabbitMQ run).
    """
    out = {}
    for kind in region_hosts.TOPOLOGIES:
        rows = {'2.0': [], '1.5': [], 'heartbeat': []}
        for s in [s for s in sims if s.kind == kind][:5]:
            transport = sim.RecordingTransport()
            report = s.report()
            for version in state_wire.WRITABLE:
                clock = sim.SimClock()
                publisher = notify.NotificationStatePublisher(
                    transport, s.name, sim.TOPIC, version=version,
                    clock=clock)
                publisher.publish(report)
                if version == state_wire.VERSION:
                    clock.now += sim.HEARTBEAT_S
                    publisher.publish(report)
            s.drop_report()
            for message in transport.take():
                key = ('heartbeat' if message['event_type']
                       == state_wire.HEARTBEAT_EVENT
                       else message['payload']['version'])
                rows[key].append(message)
        if rows['2.0']:
            out[kind] = {key: _size_row(messages)
                         for key, messages in rows.items()}
    return out


def _size_row(messages):
    bodies = [len(sim.wire_body(m)) for m in messages]
    payloads = [len(json.dumps(m['payload'])) for m in messages]
    return {'body_bytes_max': max(bodies), 'payload_bytes_max': max(payloads),
            'body_bytes_mean': round(statistics.fmean(bodies), 1)}


def agent_costs(sims, reps):
    """:func:`.region_sim.agent_pass_ms` on 3 hosts per kind, ``reps`` x."""
    picked = []
    for kind in region_hosts.TOPOLOGIES:
        picked += [s for s in sims if s.kind == kind][:3]
    runs = [sim.agent_pass_ms(picked) for _ in range(reps)]
    return {key: summary([statistics.fmean(r[key]) for r in runs], 3)
            for key in runs[0]}
