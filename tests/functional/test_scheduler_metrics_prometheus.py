"""A scheduler worker's metrics as a real Prometheus server scrapes them.

The worker's exporter starts as in nova-scheduler, on the first use of the
live-state cache; its cache holds fresh, stale and outdated hosts, and
the real ``CacheDomainFilter`` refuses hosts for known reasons. A real
``prometheus`` (tools/setup.sh installs Debian's package) scrapes the
worker every second; the gauges computed at scrape time and the refusal
counters must read what the cache and the filter did. (One port per
forked worker is covered by the unit tests: forking a test worker that
ran the bus tests hung in a full run.)
"""

import datetime

from oslo_config import fixture as config_fixture

from nova import objects
from nova.scheduler import host_manager

from nova_cacheaware import conf as ca_conf
from nova_cacheaware.contracts import placement as names
from nova_cacheaware.contracts import state_wire
from nova_cacheaware.scheduler import filters
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import metrics
from tests.fixtures import prometheus
from tests.functional import base

objects.register_all()
S = 'nova_cacheaware_scheduler_'


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def state(host, second, generation, healthy=True):
    return hs.HostCacheState(
        host=host, agent_healthy=healthy, generation=generation,
        timestamp=datetime.datetime(2026, 1, 1, 0, 0, second,
                                    tzinfo=datetime.timezone.utc))


def request(vcpus):
    flavor = objects.Flavor(flavorid='f1', vcpus=vcpus, memory_mb=512,
                            root_gb=1, ephemeral_gb=0, swap=0,
                            extra_specs={'cacheaware:cache_share': 'all'})
    return objects.RequestSpec(flavor=flavor, num_instances=1)


def host(name):
    state_ = host_manager.HostState(name, name, 'cell1')
    state_.allocation_candidates = [{'allocations': {
        'rp-%s' % name: {'resources': {names.RC_DOMAIN_VCPU: 2}}}}]
    return state_


def refusals():
    return {r: metrics.REGISTRY.get_sample_value(
        S + 'refusals_total', {'reason': r}) for r in
        metrics.REFUSAL_REASONS}


class WorkerTestCase(base.FunctionalTestCase):
    """A scheduler worker's metrics on a free port of loopback."""

    def setUp(self):
        super().setUp()
        self.require(prometheus.binary() is not None,
                     'the prometheus server (Debian package prometheus, '
                     'installed by tools/setup.sh)')
        self.port = prometheus.free_port()
        self.useFixture(config_fixture.Config(ca_conf.CONF)).config(
            listen_for_host_state=False, metrics_ports=1,
            metrics_listen='127.0.0.1:%d' % self.port,
            group='cacheaware_scheduler')
        for reset in (live_state.reset, metrics.stop_exporter):
            reset()
            self.addCleanup(reset)


class SchedulerPrometheusTest(WorkerTestCase):

    def test_prometheus_reads_the_cache_and_the_refusals(self):
        cache = live_state.get_cache()
        # Started by the first use of the cache, as in a scheduler worker.
        self.assertEqual(self.port, metrics.start_exporter(
            ca_conf.CONF.cacheaware_scheduler, None).port)
        clock = Clock()
        cache._clock = clock
        cache.update(state('old', 0, 1))
        clock.now += cache.ttl + 40
        for name in ('a', 'b'):
            cache.update(state(name, 1, 1))
        cache.update(state('sick', 1, 1, healthy=False))
        cache.update(state('lost', 1, 1))
        cache.heartbeat(state_wire.Heartbeat('lost', 2, True))
        clock.now += 5

        before = refusals()
        filt = filters.CacheDomainFilter()
        self.assertFalse(filt.host_passes(host('sick'), request(2)))
        for _ in range(3):
            self.assertFalse(filt.host_passes(host('a'), request(4)))
        self.assertTrue(filt.host_passes(host('b'), request(2)))
        after = refusals()
        self.assertEqual(
            {'agent_unhealthy': 1, 'no_one_domain_candidate': 3},
            {r: after[r] - before[r] for r in after if after[r] != before[r]})

        prom = self.useFixture(prometheus.PrometheusServer(
            {'nova-cacheaware-scheduler': ['127.0.0.1:%d' % self.port]}))
        expected = {
            S + 'hosts{live_state="fresh"}': 3.0,
            S + 'hosts{live_state="missing_or_stale"}': 1.0,
            S + 'hosts{live_state="outdated"}': 1.0,
            S + 'live_state_age_seconds_count': 5.0,
            # a, b, sick 5 s; lost 5 s since received; old ttl + 45 s.
            S + 'live_state_age_seconds_bucket{le="5.0"}': 4.0,
            S + 'live_state_age_seconds_sum': 20.0 + cache.ttl + 45,
        }
        for reason, value in after.items():
            expected[S + 'refusals_total{reason="%s"}' % reason] = value
        for expr, value in sorted(expected.items()):
            self.assertEqual(value, prom.wait_value(expr, value),
                             '%s in Prometheus' % expr)
