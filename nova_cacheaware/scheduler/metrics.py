"""The scheduler plugins' Prometheus metrics (doc/source/admin/metrics.rst).

One set per scheduler worker process, on a private registry
(:data:`REGISTRY`). The filter runs per host per request on regions of
10 000 hosts, so the hot paths only increment counters that are bound to
their labels here, once (a dict lookup and a locked add): per request, per
refusal, per claim, per message received. Nothing is allocated per host per
request. The per-host figures (how fresh each host's live state is, how
old) are computed when Prometheus scrapes, from the live-state cache, and
exported as a few aggregate series (:class:`LiveStateCollector`), never one
series per host.

Exposition: nova-scheduler forks its workers, each with its own cache,
claims and counters. Each worker serves its own registry on the first free
port of ``[cacheaware_scheduler] metrics_listen``'s base port ...
base + ``metrics_ports`` - 1, started on first use in the process (as the
live-state listener is) so that the parent, which forks before scheduling,
holds no port. prometheus_client's multiprocess mode was not chosen: it
needs ``PROMETHEUS_MULTIPROC_DIR`` set before nova-scheduler imports
anything, a directory cleaned at every restart, and it cannot aggregate a
collector computed at scrape time, which is what the live-state gauges
are. A worker that finds no port logs it once and schedules without
metrics.
"""

import os
import threading

from oslo_log import log as logging
import prometheus_client as prom
from prometheus_client import core as prom_core

from nova_cacheaware import exception
from nova_cacheaware import metrics_http

LOG = logging.getLogger(__name__)

PREFIX = 'nova_cacheaware_scheduler_'
REGISTRY = prom.CollectorRegistry()

#: ``reason`` label values of ``refusals_total``: why CacheDomainFilter
#: refused a host. A fixed set (the log line has the details).
REFUSAL_REASONS = (
    'invalid_specs',           # the flavor's cacheaware: keys are invalid
    'contradicting_specs',     # they contradict each other
    'agent_unhealthy',         # fresh live state says unhealthy
    'state_missing_or_stale',  # no fresh live state while others report
    'no_one_domain_candidate',  # no candidate puts the vCPUs in one domain
    'domains_closed',          # every domain refused by the domain policy
    'no_domain_room',          # host model: no domain has room
)
#: ``event`` label values of ``claims_total``.
CLAIM_EVENTS = ('recorded', 'reserved', 'settled')
#: ``kind`` and ``outcome`` label values of ``live_messages_total``.
MESSAGE_KINDS = ('state', 'heartbeat', 'digest')
MESSAGE_OUTCOMES = ('stored', 'out_of_order', 'invalid')
#: ``live_state`` label values of ``hosts``.
FRESHNESS = ('fresh', 'missing_or_stale', 'outdated')
#: Ages of live states in seconds (the TTL is 30-120 s in practice).
AGE_BUCKETS = (1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)

_refusals = prom.Counter(
    PREFIX + 'refusals', 'Hosts CacheDomainFilter refused, by reason.',
    ['reason'], registry=REGISTRY)
_requests = prom.Counter(
    PREFIX + 'filter_requests', 'Requests CacheDomainFilter filtered (any '
    'flavor).', registry=REGISTRY)
_claims = prom.Counter(
    PREFIX + 'claims', 'Cache-domain claims of this worker: recorded '
    '(Nova consumed the host), reserved (at claim time), settled (a live '
    'state lists the instance).', ['event'], registry=REGISTRY)
_messages = prom.Counter(
    PREFIX + 'live_messages', 'Live-state messages received from agents, '
    'by kind and outcome (out_of_order and invalid are dropped).',
    ['kind', 'outcome'], registry=REGISTRY)

# Bound once: the hot paths do a dict lookup, never .labels().
REFUSED = {r: _refusals.labels(r) for r in REFUSAL_REASONS}
CLAIMS = {e: _claims.labels(e) for e in CLAIM_EVENTS}
MESSAGES = {(k, o): _messages.labels(k, o)
            for k in MESSAGE_KINDS for o in MESSAGE_OUTCOMES}
REQUESTS = _requests


def refused(reason):
    """Count one refused host (``reason`` in :data:`REFUSAL_REASONS`)."""
    REFUSED[reason].inc()


def liveness_reason(why):
    """The refusal reason label of a liveness rule's text ``why``."""
    return ('agent_unhealthy' if 'unhealthy' in why
            else 'state_missing_or_stale')


def claimed(pending, n=1):
    """Count ``n`` claims recorded (or reserved when ``pending``)."""
    CLAIMS['reserved' if pending else 'recorded'].inc(n)


def settled(n):
    """Count ``n`` claims settled by a live state."""
    if n:
        CLAIMS['settled'].inc(n)


def received(kind, outcome):
    """Count one live-state message of ``kind`` (state/heartbeat)."""
    MESSAGES[(kind, outcome)].inc()


class LiveStateCollector:
    """Per-host freshness and age of live state, aggregated at scrape time.

    ``cache_of()`` returns the process's
    :class:`~.state_cache.HostStateCache` or None (no cache yet).
    """

    def __init__(self, cache_of):
        self._cache_of = cache_of

    def describe(self):
        """No fixed description: the registry must not collect to learn."""
        return []

    def collect(self):
        """The ``hosts`` gauge and the ``live_state_age_seconds`` histogram."""
        cache = self._cache_of()
        counts = dict.fromkeys(FRESHNESS, 0)
        ages = []
        if cache is not None:
            for status, age in cache.freshness():
                counts[status] += 1
                if age is not None:
                    ages.append(age)
        hosts = prom_core.GaugeMetricFamily(
            PREFIX + 'hosts', 'Hosts known to this worker\'s live-state '
            'cache, by the state of their live state (hosts never heard '
            'are not known).', labels=['live_state'])
        for status in FRESHNESS:
            hosts.add_metric([status], counts[status])
        yield hosts
        yield _age_histogram(ages)


def _age_histogram(ages):
    """The histogram of ``ages`` (seconds since received or confirmed)."""
    buckets = []
    ages.sort()
    i = 0
    for bound in AGE_BUCKETS:
        while i < len(ages) and ages[i] <= bound:
            i += 1
        buckets.append((_le(bound), i))
    buckets.append(('+Inf', len(ages)))
    family = prom_core.HistogramMetricFamily(
        PREFIX + 'live_state_age_seconds', 'Age of each known host\'s live '
        'state (since received or confirmed by a heartbeat), over hosts, '
        'at scrape time.')
    family.add_metric([], buckets, sum_value=sum(ages))
    return family


def _le(bound):
    return prom.utils.floatToGoString(bound)


_exporter = {'started': False, 'exporter': None}
_lock = threading.Lock()


def start_exporter(opts, cache_of):
    """Serve :data:`REGISTRY` for this worker, once per process.

    ``opts``: ``[cacheaware_scheduler]``. Never raises: no metrics is
    logged once and scheduling goes on.
    """
    if _exporter['started']:
        return _exporter['exporter']
    with _lock:
        if _exporter['started']:
            return _exporter['exporter']
        _exporter['started'] = True
        try:
            where = metrics_http.parse_listen(opts.metrics_listen)
        except exception.InvalidInput as e:
            LOG.error('No scheduler metrics: [cacheaware_scheduler] %s', e)
            return None
        if where is None:
            return None
        _collector(cache_of)
        _exporter['exporter'] = _bind(where, _port_count(opts))
    return _exporter['exporter']


def _collector(cache_of):
    if _exporter.get('collector') is None:
        _exporter['collector'] = LiveStateCollector(cache_of)
        REGISTRY.register(_exporter['collector'])


def _port_count(opts):
    if opts.metrics_ports:
        return opts.metrics_ports
    try:
        from nova import conf as nova_conf
        workers = nova_conf.CONF.scheduler.workers
    except Exception:  # not in nova-scheduler (tests, tools)
        workers = None
    return workers or os.cpu_count() or 1


def _bind(where, count):
    """The first exporter that binds in ``count`` ports from the base."""
    address, base = where
    for port in range(base, min(base + count, 65536)):
        try:
            exporter = metrics_http.Exporter(address, port, REGISTRY)
        except OSError:
            continue  # another worker's, or another program's
        LOG.info('Scheduler metrics of worker %d on %s', os.getpid(),
                 exporter.url())
        return exporter
    LOG.warning('No scheduler metrics in worker %d: no free port in '
                '%s:%d-%d ([cacheaware_scheduler] metrics_listen, '
                'metrics_ports); scheduling is not affected', os.getpid(),
                address, base, base + count - 1)
    return None


def stop_exporter():
    """Stop this process's exporter and allow a new one (tests, reload)."""
    with _lock:
        exporter = _exporter['exporter']
        _exporter.update(started=False, exporter=None)
    if exporter is not None:
        exporter.stop()


def _forget_in_child():
    # The parent's server thread does not exist in a forked child; the
    # child binds its own port on first use.
    global _lock
    _lock = threading.Lock()
    _exporter.update(started=False, exporter=None)


os.register_at_fork(after_in_child=_forget_in_child)
