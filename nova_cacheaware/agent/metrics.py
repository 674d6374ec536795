"""The agent's Prometheus metrics (doc/source/admin/metrics.rst).

:class:`AgentMetrics` holds them on a private registry; the agent calls it
once per pass (:meth:`AgentMetrics.observe_pass`) and where a dependency
fails, never per vCPU or per message byte. Names and labels are a
contract with dashboards and alerts (``deploy/grafana/``): change them only
with a release note. Every label takes a small fixed set of values, never
free text or a uuid.
"""

import logging
import time

import prometheus_client as prom

from nova_cacheaware.agent import capability
from nova_cacheaware.cachedomain import model
from nova_cacheaware.contracts import cache_state
from nova_cacheaware import exception
from nova_cacheaware import metrics_http

LOG = logging.getLogger(__name__)

PREFIX = 'nova_cacheaware_agent_'

#: ``share`` label values of ``servers``: All-share, Partial-share, or left
#: out of the plan (dedicated, not movable, no usable domain).
SHARES = ('all', 'partial', 'none')
#: ``outcome`` label values of ``repins_total``.
REPIN_OUTCOMES = ('done', 'deferred', 'failed')
#: ``kind`` label values of the live-state message counters.
MESSAGE_KINDS = ('state', 'heartbeat')
#: Pass durations: a pass takes milliseconds idle, seconds with many VMs.
PASS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                30.0)


class AgentMetrics:
    """The agent's metrics, on their own registry (:attr:`registry`)."""

    def __init__(self, registry=None, clock=time.time):
        self.registry = registry or prom.CollectorRegistry()
        self._clock = clock
        r = self.registry
        self.servers = prom.Gauge(
            PREFIX + 'servers', 'Servers on this host by cache share the '
            'last pass gave them.', ['share'], registry=r)
        self.domains = prom.Gauge(
            PREFIX + 'cache_domains', 'Usable cache domains by state '
            '(Empty, Clean: one memory-bound server, Dirty: more).',
            ['state'], registry=r)
        self.repins = prom.Counter(
            PREFIX + 'repins', 'vCPU repins by outcome (deferred: over '
            '[agent] max_repins_per_period, done at a later pass).',
            ['outcome'], registry=r)
        self.storm_vms = prom.Gauge(
            PREFIX + 'spin_storm_servers', 'Servers in a spin storm '
            '(vcpu_sizing capability; 0 without it).', registry=r)
        self.balloon_moves = prom.Counter(
            PREFIX + 'balloon_moves', 'Balloon target changes applied to '
            'servers (balloon capability).', registry=r)
        self.balloon_mib = prom.Counter(
            PREFIX + 'balloon_moved_mib', 'MiB of guest memory moved by the '
            'balloon capability.', registry=r)
        self.placement_errors = prom.Counter(
            PREFIX + 'placement_sync_errors', 'Failed syncs of the cache '
            'domain providers with Placement.', registry=r)
        self.bus_failures = prom.Counter(
            PREFIX + 'bus_send_failures', 'Live-state messages the message '
            'bus did not take, by kind.', ['kind'], registry=r)
        self.messages = prom.Counter(
            PREFIX + 'state_messages', 'Live-state messages sent to the '
            'schedulers, by kind.', ['kind'], registry=r)
        self.message_bytes = prom.Counter(
            PREFIX + 'state_message_bytes', 'Bytes of the live-state '
            'messages sent (JSON of the message), by kind.', ['kind'],
            registry=r)
        self._init_pass_metrics(r)
        self._zero()

    def _init_pass_metrics(self, r):
        self.passes = prom.Counter(
            PREFIX + 'passes', 'Reconcile passes by result.', ['result'],
            registry=r)
        self.pass_seconds = prom.Histogram(
            PREFIX + 'pass_duration_seconds', 'Duration of reconcile '
            'passes.', buckets=PASS_BUCKETS, registry=r)
        self.last_pass = prom.Gauge(
            PREFIX + 'last_pass_timestamp_seconds', 'Unix time the last '
            'successful pass ended (0: none yet).', registry=r)
        self.last_pass_seconds = prom.Gauge(
            PREFIX + 'last_pass_duration_seconds', 'Duration of the last '
            'pass.', registry=r)
        self.healthy = prom.Gauge(
            PREFIX + 'healthy', '1 when the last pass completed, 0 when it '
            'failed (libvirtd unreachable, planner error) or none ran.',
            registry=r)

    def _zero(self):
        # Every series exists from the start: rate() and absent-based
        # alerts need a 0 before the first event.
        for share in SHARES:
            self.servers.labels(share)
        for state in cache_state.DOMAIN_STATES:
            self.domains.labels(state)
        for outcome in REPIN_OUTCOMES:
            self.repins.labels(outcome)
        for kind in MESSAGE_KINDS:
            self.messages.labels(kind)
            self.message_bytes.labels(kind)
            self.bus_failures.labels(kind)
        for result in ('ok', 'failed'):
            self.passes.labels(result)

    def observe_pass(self, one, seconds):
        """Account for one completed :class:`~.service.Pass`."""
        shares = dict.fromkeys(SHARES, 0)
        for decision in one.decisions:
            share = ('all' if decision.share == model.SHARE_ALL
                     else 'partial' if decision.share else 'none')
            shares[share] += 1
        for share, n in shares.items():
            self.servers.labels(share).set(n)
        states = dict.fromkeys(cache_state.DOMAIN_STATES, 0)
        for domain in one.plan_output.domains.values():
            states[domain.state] = states.get(domain.state, 0) + 1
        for state, n in states.items():
            self.domains.labels(state).set(n)
        result = one.result
        self.repins.labels('done').inc(len(result.succeeded))
        self.repins.labels('deferred').inc(len(result.deferred))
        self.repins.labels('failed').inc(len(result.failed))
        self._capabilities(one.capabilities or {})
        self.passes.labels('ok').inc()
        self.pass_seconds.observe(seconds)
        self.last_pass_seconds.set(seconds)
        self.last_pass.set(self._clock())
        self.healthy.set(1)

    def failed_pass(self, seconds):
        """Account for a pass that raised (nothing it did is counted)."""
        self.passes.labels('failed').inc()
        self.pass_seconds.observe(seconds)
        self.last_pass_seconds.set(seconds)
        self.healthy.set(0)

    def _capabilities(self, reports):
        sizing = capability.report_of(reports, 'vcpu_sizing') or {}
        self.storm_vms.set(sum(
            1 for entry in (sizing.get('vms') or {}).values()
            if (entry.get('storm') or {}).get('storm')))
        balloon = capability.report_of(reports, 'balloon') or {}
        # Between rounds the capability repeats its last report (with
        # next_round_in_s): count each round once.
        if not balloon or 'next_round_in_s' in balloon:
            return
        self.balloon_moves.inc(balloon.get('moves', 0))
        self.balloon_mib.inc(balloon.get('moved_mib', 0))

    def placement_sync_failed(self):
        """One failed sync with Placement."""
        self.placement_errors.inc()

    def message_sent(self, kind, size):
        """A live-state message of ``kind`` and ``size`` bytes went out."""
        self.messages.labels(kind).inc()
        self.message_bytes.labels(kind).inc(size)

    def send_failed(self, kind):
        """The bus refused a live-state message of ``kind``."""
        self.bus_failures.labels(kind).inc()


def serve(listen, agent_metrics):
    """Start the ``[agent] metrics_listen`` exporter, or None.

    A bad value or a port that cannot be bound is logged (ERROR) and the
    agent goes on without metrics: pinning matters more than its figures.
    """
    try:
        where = metrics_http.parse_listen(listen)
        if where is None:
            return None
        exporter = metrics_http.Exporter(where[0], where[1],
                                         agent_metrics.registry)
    except (exception.InvalidInput, OSError) as e:
        LOG.error('[agent] metrics_listen: no metrics endpoint (%s); the '
                  'agent goes on without it', e)
        return None
    LOG.info('Prometheus metrics on %s', exporter.url())
    return exporter
