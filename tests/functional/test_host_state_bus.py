"""cacheaware.host.state over the machine's real RabbitMQ.

Each test uses its own exchange, topic and queue names and deletes the
queues and the exchange it caused to be declared.
"""

import datetime
import multiprocessing
import os
import time
import uuid

import kombu
from oslo_config import cfg
from oslo_config import fixture as config_fixture
import oslo_messaging
import testtools

from nova_cacheaware import conf as ca_conf
from nova_cacheaware.contracts import host_state as wire
from nova_cacheaware import notifications
from nova_cacheaware.scheduler import claim_share
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import host_state
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import state_cache

RABBIT_URL = os.environ.get('NOVA_CACHEAWARE_RABBIT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')
KOMBU_URL = 'amqp' + RABBIT_URL[len('rabbit'):]
WAIT = 15.0


def rabbit_reachable():
    try:
        with kombu.Connection(KOMBU_URL, connect_timeout=2) as conn:
            conn.connect()
        return True
    except OSError:
        return False


def state(host, vms_per_domain):
    return host_state.HostCacheState(
        host=host, timestamp=datetime.datetime.now(datetime.timezone.utc),
        agent_healthy=True,
        domains=tuple(wire.DomainState(
            id='L3-%d' % i, state=wire.domain_state(len(vms)),
            memory_bound_vms=tuple(vms), usable_cpus=8)
            for i, vms in enumerate(vms_per_domain)))


def wait_for(predicate, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _worker(conn, expected_hosts):
    """A 'scheduler worker process': its own listener via live_state."""
    try:
        live_state.reset()   # forget the parent's (pid-keyed anyway)
        cache = live_state.get_cache()
        conn.send(('ready', live_state._process['listener'] is not None))
        ok = wait_for(lambda: all(cache.get(h) for h in expected_hosts))
        conn.send(('seen', ok, sorted(h for h in expected_hosts
                                      if cache.get(h))))
    finally:
        live_state.reset()
        conn.close()


@testtools.skipUnless(rabbit_reachable() or
                      os.environ.get('NOVA_CACHEAWARE_CI_SERVICES'),
                      'RabbitMQ not reachable on 127.0.0.1:5672')
class BusTestCase(testtools.TestCase):
    """A transport, exchange and topic of the test's own, cleaned up."""

    def setUp(self):
        super().setUp()
        run = uuid.uuid4().hex[:12]
        self.exchange = 'cacheaware-test-%s' % run
        self.topic = 'cacheaware_test_%s' % run
        self.prefix = 'cacheaware-test-%s' % run
        self.conf = cfg.ConfigOpts()
        self.conf([], project='cacheaware-test')
        # The driver reads control_exchange when it is created; the first
        # transport only registers the options.
        oslo_messaging.get_notification_transport(
            self.conf, url=RABBIT_URL).cleanup()
        self.conf.set_override('control_exchange', self.exchange)
        self.transport = oslo_messaging.get_notification_transport(
            self.conf, url=RABBIT_URL)
        self.addCleanup(self._delete_rabbit_objects)
        self.addCleanup(self.transport.cleanup)
        self.notifier = notifications.make_notifier(
            self.transport, 'compute-x', self.topic)

    def _delete_rabbit_objects(self):
        with kombu.Connection(KOMBU_URL) as conn:
            channel = conn.channel()
            for name in self._queues():
                channel.queue_delete(name)
            channel.exchange_delete(self.exchange)

    def _queues(self):
        # Queues are named after the pool; both come from self.prefix. The
        # sender's default queue (topic.info) is nobody's: deleted too.
        return sorted(set(getattr(self, 'queues', []))
                      | {'%s.info' % self.topic})

    def _listen(self, pool, endpoints=()):
        cache = state_cache.HostStateCache(ttl=60)
        self.queues = self._queues() + [pool]
        listener = notifications.start_host_state_listener(
            self.transport, cache, self.topic, pool, endpoints=endpoints)
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        return cache


@testtools.skipUnless(rabbit_reachable() or
                      os.environ.get('NOVA_CACHEAWARE_CI_SERVICES'),
                      'RabbitMQ not reachable on 127.0.0.1:5672')
class HostStateBusTest(BusTestCase):

    def test_every_listener_pool_gets_every_host_state(self):
        worker_a = self._listen(notifications.process_pool_name(
            self.prefix, 'sched', 1))
        worker_b = self._listen(notifications.process_pool_name(
            self.prefix, 'sched', 2))
        sent = {'c%d' % i: state('c%d' % i, [['vm%d' % i], []])
                for i in range(4)}
        for s in sent.values():
            notifications.publish_host_state(self.notifier, s)
        for cache in (worker_a, worker_b):
            self.assertTrue(wait_for(
                lambda c=cache: all(c.get(h) for h in sent)))
            for host, s in sent.items():
                self.assertEqual(s, cache.get(host))

    def test_workers_share_claims_with_each_other_not_themselves(self):
        # Two scheduler workers, each with its ledger and its queue; the
        # host state and the claims share the topic.
        ledgers, publishers, caches = {}, {}, {}
        for name in ('a', 'b'):
            pool = notifications.process_pool_name(self.prefix, name, 1)
            ledger = claims.ClaimLedger(memory=120, settle=60)
            ledgers[name] = ledger
            caches[name] = self._listen(pool, [claim_share.HostClaimEndpoint(
                lambda ledger=ledger: ledger, pool)])
            publishers[name] = claim_share.ClaimPublisher(
                self.transport, self.topic, pool)
            ledger.on_claim = publishers[name]
            self.addCleanup(publishers[name].stop, 10)
        # Worker a sees its hand-out on cn-1 claimed (Nova consumed it).
        ledgers['a'].hand_out('cn-1', 0, claims.Claim(
            None, 'vm-1', 2, True, ledgers['a'].now()),
            resolve=lambda: 'L3-2')
        ledgers['a'].observe('cn-1', 1)
        # The request path only queued it; a's sender thread sends it.
        self.assertEqual(1, publishers['a'].queued)
        self.assertTrue(wait_for(lambda: ledgers['b'].claims('cn-1')))
        self.assertTrue(wait_for(lambda: publishers['a'].sent == 1))
        self.assertEqual((1, 0, 0), (publishers['a'].sent,
                                     publishers['a'].failed,
                                     publishers['a'].dropped))
        (got,) = ledgers['b'].claims('cn-1')
        self.assertEqual(('L3-2', 'vm-1', 2, True),
                         (got.provider, got.instance, got.vcpus,
                          got.memory_bound))
        # a counts its claim once; the host state still reaches both.
        notifications.publish_host_state(self.notifier,
                                         state('c0', [['vm0']]))
        for cache in caches.values():
            self.assertTrue(wait_for(lambda c=cache: c.get('c0')))
        self.assertEqual(1, len(ledgers['a'].claims('cn-1')))

    def test_bad_payload_dropped_and_listener_keeps_going(self):
        cache = self._listen(notifications.process_pool_name(
            self.prefix, 'sched', 1))
        self.notifier.info({}, wire.EVENT_TYPE,
                           {'version': '1.0', 'host': 'evil'})
        self.notifier.info({}, wire.EVENT_TYPE,
                           dict(wire.to_payload(state('bad', [])),
                                version='2.0'))
        self.notifier.info({}, 'compute.instance.create.end', {'x': 1})
        good = state('good', [[]])
        notifications.publish_host_state(self.notifier, good)
        self.assertTrue(wait_for(lambda: cache.get('good') is not None))
        self.assertEqual(good, cache.get('good'))
        self.assertEqual(1, len(cache))

    def test_forked_scheduler_workers_each_see_every_host(self):
        # Creating a transport registers oslo.messaging's options.
        oslo_messaging.get_notification_transport(
            ca_conf.CONF, url=RABBIT_URL).cleanup()
        fixture = self.useFixture(config_fixture.Config(ca_conf.CONF))
        fixture.config(transport_url=RABBIT_URL,
                       control_exchange=self.exchange)
        fixture.config(listen_for_host_state=True,
                       host_state_topic=self.topic,
                       host_state_pool_prefix=self.prefix,
                       group='cacheaware_scheduler')
        hosts = ['c1', 'c2', 'c3']
        ctx = multiprocessing.get_context('fork')
        workers = []
        for _ in range(2):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, hosts))
            proc.start()
            workers.append((proc, parent))
            self.addCleanup(proc.join, 5)
        self.queues = [notifications.process_pool_name(self.prefix,
                                                       pid=p.pid)
                       for p, _ in workers]
        for _, pipe in workers:
            self.assertTrue(pipe.poll(WAIT))
            self.assertEqual(('ready', True), pipe.recv())
        for host in hosts:
            notifications.publish_host_state(self.notifier,
                                             state(host, [[], []]))
        for _, pipe in workers:
            self.assertTrue(pipe.poll(WAIT + 5))
            self.assertEqual(('seen', True, hosts), pipe.recv())
