"""The scheduler plugins' Prometheus metrics (the real scrape is in
tests/functional/test_metrics_prometheus.py)."""

import socket
import urllib.request

import fixtures
from oslo_config import fixture as config_fixture
import testtools

from nova_cacheaware import conf as ca_conf
from nova_cacheaware.contracts import state_wire
from nova_cacheaware import notifications
from nova_cacheaware.policy import liveness
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import filters
from nova_cacheaware.scheduler import metrics
from nova_cacheaware.scheduler import state_cache
from tests.unit.scheduler import test_plugins as plugins
from tests.unit.scheduler import test_state_cache as sc


def value(name, **labels):
    """The value of one series of the scheduler registry (0 if absent)."""
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


class Delta:
    """Counter values before, to assert what one test added."""

    def __init__(self, name, label, values):
        self.name, self.label = name, label
        self.before = {v: value(name, **{label: v}) for v in values}

    def __call__(self):
        return {v: value(self.name, **{self.label: v}) - b
                for v, b in self.before.items()
                if value(self.name, **{self.label: v}) != b}


class LiveStateCollectorTest(testtools.TestCase):

    def test_fresh_stale_outdated_and_ages(self):
        clock = sc.Clock()
        cache = state_cache.HostStateCache(ttl=60, clock=clock)
        cache.update(sc.gen('old', 0, 1))           # stale at the end
        clock.now += 100
        cache.update(sc.gen('fresh', 1, 1))         # 10 s old
        cache.update(sc.gen('outdated', 1, 3))
        cache.heartbeat(sc.beat('outdated', 4))     # a state was lost
        cache.heartbeat(sc.beat('beats-only', 9))   # no state at all
        cache.update(sc.gen('beaten', 1, 2))
        clock.now += 10
        cache.heartbeat(sc.beat('beaten', 2))       # confirmed now: 0 s
        families = {f.name: f for f in
                    metrics.LiveStateCollector(lambda: cache).collect()}
        hosts = {s.labels['live_state']: s.value
                 for s in families['nova_cacheaware_scheduler_hosts'].samples}
        self.assertEqual({'fresh': 2, 'missing_or_stale': 2,
                          'outdated': 1}, hosts)
        age = {(s.name, s.labels.get('le')): s.value for s in families[
            'nova_cacheaware_scheduler_live_state_age_seconds'].samples}
        # Ages: beaten 0, fresh 10, outdated 10, old 110 (none: beats-only).
        self.assertEqual(1, age[('nova_cacheaware_scheduler_live_state_'
                                 'age_seconds_bucket', '1.0')])
        self.assertEqual(3, age[('nova_cacheaware_scheduler_live_state_'
                                 'age_seconds_bucket', '10.0')])
        self.assertEqual(4, age[('nova_cacheaware_scheduler_live_state_'
                                 'age_seconds_bucket', '+Inf')])
        self.assertEqual(130, age[('nova_cacheaware_scheduler_live_state_'
                                   'age_seconds_sum', None)])
        self.assertEqual(4, age[('nova_cacheaware_scheduler_live_state_'
                                 'age_seconds_count', None)])

    def test_no_cache_yet_is_all_zero(self):
        families = list(metrics.LiveStateCollector(lambda: None).collect())
        self.assertEqual([0, 0, 0], [s.value for s in families[0].samples])
        self.assertEqual(0, families[1].samples[-1].value)

    def test_one_series_per_status_not_per_host(self):
        cache = state_cache.HostStateCache(ttl=60)
        for i in range(10000):
            cache.update(sc.at('h%d' % i, 0))
        hosts = list(metrics.LiveStateCollector(lambda: cache).collect())[0]
        self.assertEqual(3, len(hosts.samples))
        self.assertEqual(10000, sum(s.value for s in hosts.samples))


class RefusalTest(plugins.PluginTestCase):

    def test_refusals_counted_by_reason(self):
        delta = Delta('nova_cacheaware_scheduler_refusals_total', 'reason',
                      metrics.REFUSAL_REASONS)
        requests = value('nova_cacheaware_scheduler_filter_requests_total')
        filt = filters.CacheDomainFilter()
        cands = [plugins.candidate(('d1', {plugins.VCPU: 2,
                                           plugins.MEMBOUND: 1}))]
        # No candidate with all 4 vCPUs in one domain, twice.
        for _ in range(2):
            self.assertFalse(filt.host_passes(plugins.host('h1', [
                plugins.candidate()]), plugins.spec(
                    {'cacheaware:cache_share': 'all'}, vcpus=4)))
        self.cache.update(plugins.live('h2', [[]], healthy=False))
        self.assertFalse(filt.host_passes(plugins.host('h2', cands),
                                          plugins.spec(plugins.ALL_CLEAN)))
        self.assertFalse(filt.host_passes(plugins.host('h1', cands),
                                          plugins.spec({
                                              'cacheaware:workload': 'x'})))
        # filter_all counts requests, not hosts.
        list(filt.filter_all([plugins.host('h%d' % i, cands)
                              for i in range(5)],
                             plugins.spec({'hw:x': '1'})))
        self.assertEqual({'no_one_domain_candidate': 2,
                          'agent_unhealthy': 1, 'invalid_specs': 1},
                         delta())
        self.assertEqual(1, value(
            'nova_cacheaware_scheduler_filter_requests_total') - requests)

    def test_liveness_texts_map_to_their_labels(self):
        view = liveness.LiveView(ttl=10, age=1, healthy=False,
                                 quiet_for=0, heard_for=100)
        self.assertEqual('agent_unhealthy', metrics.liveness_reason(
            liveness.ineligible_reason(view)))
        for age in (None, 50):
            view = liveness.LiveView(ttl=10, age=age, healthy=True,
                                     quiet_for=0, heard_for=100)
            self.assertEqual('state_missing_or_stale',
                             metrics.liveness_reason(
                                 liveness.ineligible_reason(view)))


class ClaimAndMessageTest(testtools.TestCase):

    def test_claims_recorded_reserved_settled(self):
        delta = Delta('nova_cacheaware_scheduler_claims_total', 'event',
                      metrics.CLAIM_EVENTS)
        ledger = claims.ClaimLedger(120, 60)
        ledger.reserve('h1', claims.Claim('p1', 'vm-1', 2, False, at=0,
                                          pending=True))
        ledger.record('h1', claims.Claim('p1', 'vm-1', 2, False, at=0))
        ledger.record('h2', claims.Claim('p2', 'vm-2', 2, False, at=0))
        ledger.settle({'vm-1', 'vm-2', 'vm-3'})
        self.assertEqual({'reserved': 1, 'recorded': 2, 'settled': 2},
                         delta())

    def test_messages_by_kind_and_outcome(self):
        counted = []
        cache = state_cache.HostStateCache(ttl=60)
        endpoint = notifications.HostStateEndpoint(
            cache, lambda *kv: counted.append(kv))
        endpoint.info({}, 'agent', state_wire.HEARTBEAT_EVENT,
                      state_wire.heartbeat_payload(sc.beat('h1', 5)), {})
        endpoint.info({}, 'agent', state_wire.HEARTBEAT_EVENT,
                      state_wire.heartbeat_payload(sc.beat('h1', 4)), {})
        endpoint.info({}, 'agent', 'cacheaware.host.state', {'x': 1}, {})
        self.assertEqual([('heartbeat', 'stored'),
                          ('heartbeat', 'out_of_order'),
                          ('state', 'invalid')], counted)
        before = value('nova_cacheaware_scheduler_live_messages_total',
                       kind='state', outcome='invalid')
        metrics.received('state', 'invalid')
        self.assertEqual(before + 1, value(
            'nova_cacheaware_scheduler_live_messages_total',
            kind='state', outcome='invalid'))


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class ExporterTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(ca_conf.CONF))
        metrics.stop_exporter()
        self.addCleanup(metrics.stop_exporter)
        self.log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.scheduler.metrics'))

    def start(self, listen, ports=2):
        self.conf.config(metrics_listen=listen, metrics_ports=ports,
                         group='cacheaware_scheduler')
        return metrics.start_exporter(ca_conf.CONF.cacheaware_scheduler,
                                      lambda: None)

    def test_off_by_default(self):
        self.assertEqual('', ca_conf.CONF.cacheaware_scheduler.metrics_listen)
        self.assertIsNone(self.start(''))

    def test_a_taken_base_port_moves_to_the_next(self):
        base = free_port()
        taken = socket.socket()
        taken.bind(('127.0.0.1', base))
        taken.listen()
        self.addCleanup(taken.close)
        exporter = self.start('127.0.0.1:%d' % base)
        if exporter is None or exporter.port != base + 1:
            self.skipTest('port %d was not free' % (base + 1))
        # Once per process: a second call returns the same.
        self.assertIs(exporter, self.start('127.0.0.1:%d' % base))
        body = urllib.request.urlopen(exporter.url(), timeout=5).read()
        self.assertIn(b'nova_cacheaware_scheduler_refusals_total', body)

    def test_no_free_port_logs_once_and_schedules(self):
        base = free_port()
        taken = socket.socket()
        taken.bind(('127.0.0.1', base))
        taken.listen()
        self.addCleanup(taken.close)
        self.assertIsNone(self.start('127.0.0.1:%d' % base, ports=1))
        self.assertIsNone(self.start('127.0.0.1:%d' % base, ports=1))
        self.assertEqual(1, self.log.output.count('No scheduler metrics'))
        self.assertIn('scheduling is not affected', self.log.output)

    def test_bad_value_logged_not_raised(self):
        self.assertIsNone(self.start('9465'))
        self.assertIn('metrics_listen must be <address>:<port>',
                      self.log.output)
