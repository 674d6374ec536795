"""The agents' live state in a cells v2 deployment, on the real RabbitMQ.

In a multi-cell Nova, nova-compute's ``[DEFAULT] transport_url`` is its
cell's bus, while nova-scheduler (an API-level service) is on the
API-level bus. Each test makes RabbitMQ vhosts for those buses. The agent's
publisher is built by the agent's own code from an agent configuration
file (``cmd.agent.make_conf`` and ``build_publisher``), the scheduler's
listener by ``live_state.get_cache()`` from this process's ``CONF`` set up
as an API-level nova.conf:

* the agent's ``[oslo_messaging_notifications] transport_url`` names the
  bus the schedulers listen on: the cell host's state reaches them, and
  nothing of ours goes to the cell bus;
* without it the state is delivered (the agent sees no error) to the cell
  bus, where no scheduler listens; the scheduler never sees that host;
* the scheduler workers share their claims on their own bus;
* a dedicated notification bus works the same way;
* on the API-level bus, an agent user may be limited to the state's
  routing key (doc/source/admin/cells.rst has the permissions).

Each test deletes its vhosts, and with them every queue and exchange the
test caused to be declared.
"""

import functools
import os
import re
import subprocess
import time
import urllib.parse
import uuid

import amqp
import fixtures
import kombu
from oslo_config import fixture as config_fixture
import oslo_messaging

from nova_cacheaware.agent import reporting
from nova_cacheaware.cmd import agent as agent_cmd
from nova_cacheaware import conf as ca_conf
from nova_cacheaware import notifications
from nova_cacheaware.policy import liveness
from nova_cacheaware.scheduler import claim_share
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import state_cache
from tests.functional import base
from tests.functional import test_host_state_bus as bus

#: The scheduler's host_state_ttl: short, so that warm-up (ttl / 2) ends
#: within the test.
TTL = 4

#: The agents' state_heartbeat_s (its least): the warm-up test keeps an
#: agent heard with heartbeats, within ttl / 2.
HEARTBEAT = 1.0

VM = '0e6f7a2c-1d4b-4f3e-9a8b-7c6d5e4f3a21'

#: An agent's report (``agent.reporting.HostReport``).
REPORT = reporting.HostReport(
    memory_vms={'L3-0': (VM,), 'L3-1': ()},
    vms={VM: reporting.VmReport('memory', ('L3-0',), 2)})


@functools.lru_cache(maxsize=1)
def rabbitmqctl_works():
    """True when this user can run ``rabbitmqctl`` (asked once)."""
    return rabbitmqctl('list_vhosts').returncode == 0


def rabbitmqctl(*args):
    """``rabbitmqctl -q ARGS`` (a failed result if it cannot run)."""
    try:
        return subprocess.run(['rabbitmqctl', '-q'] + list(args),
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess(args, 1, '', str(e))


def ineligible(cache, host):
    """Why the filter refuses ``host`` All-share and Clean, or None.

    The liveness rule on the cache's view, at the default
    ``stale_host_state``.
    """
    return liveness.ineligible_reason(
        cache.live_view(host),
        ca_conf.CONF.cacheaware_scheduler.stale_host_state)


def url(vhost, credentials=None, scheme='rabbit'):
    """The URL of ``vhost`` on the test's RabbitMQ (as another user)."""
    parts = urllib.parse.urlsplit(bus.RABBIT_URL)
    netloc = parts.netloc if credentials is None else '%s:%s@%s:%s' % (
        credentials + (parts.hostname, parts.port))
    return '%s://%s/%s' % (scheme, netloc, vhost)


class VhostTestCase(base.FunctionalTestCase):
    """Vhosts of the test's own (an API bus, a cell bus) and its agents."""

    def setUp(self):
        super().setUp()
        self.require(bus.rabbit_reachable(), 'RabbitMQ on 127.0.0.1:5672')
        self.require(rabbitmqctl_works(),
                     'rabbitmqctl (vhosts of the test)')
        self.run_id = uuid.uuid4().hex[:12]
        self.topic = 'cacheaware_test_%s' % self.run_id
        self.prefix = 'cacheaware-test-%s' % self.run_id
        # Deleted last, after every connection of the test is closed.
        self.vhosts = []
        self.addCleanup(self._delete_vhosts)
        self.api = self.vhost('api')
        self.cell = self.vhost('cell1')
        self.tmp = self.useFixture(fixtures.TempDir()).path
        live_state.reset()
        claims.reset()
        self.addCleanup(claims.reset)
        self.addCleanup(live_state.reset)

    def vhost(self, name):
        """A vhost of this test, deleted (with its queues) at its end."""
        vhost = 'ca_%s_%s' % (name, self.run_id)
        made = rabbitmqctl('add_vhost', vhost)
        self.assertEqual(0, made.returncode, made.stderr)
        self.vhosts.append(vhost)
        user = urllib.parse.urlsplit(bus.RABBIT_URL).username or 'guest'
        allowed = rabbitmqctl('set_permissions', '-p', vhost, user,
                              '.*', '.*', '.*')
        self.assertEqual(0, allowed.returncode, allowed.stderr)
        return vhost

    def _delete_vhosts(self):
        for vhost in self.vhosts:
            rabbitmqctl('delete_vhost', vhost)

    def queues(self, vhost):
        """``{queue: messages}`` of ``vhost``."""
        out = rabbitmqctl('list_queues', '-p', vhost, 'name', 'messages',
                          '--no-table-headers')
        self.assertEqual(0, out.returncode, out.stderr)
        return {name: int(count) for name, count in
                (line.split('\t') for line in out.stdout.splitlines()
                 if line.strip())}

    def assertQueues(self, expected, vhost):
        # A publish is not confirmed: the broker may count it a moment
        # later.
        bus.wait_for(lambda: self.queues(vhost) == expected)
        self.assertEqual(expected, self.queues(vhost), vhost)

    # -- a compute node of cell 1 ------------------------------------------

    def agent(self, host, notification_url=None):
        """The publisher nova-cacheaware-agent builds from its file.

        The file is a cell compute's: ``[DEFAULT] transport_url`` is the
        cell bus (copied from nova-compute's nova.conf).
        """
        text = ('[DEFAULT]\ntransport_url = %s\n' % url(self.cell))
        if notification_url:
            text += ('[oslo_messaging_notifications]\ntransport_url = %s\n'
                     % notification_url)
        text += ('[agent]\nnotifications = true\nhost = %s\n'
                 'state_heartbeat_s = %s\n'
                 '[cacheaware_scheduler]\nhost_state_topic = %s\n'
                 % (host, HEARTBEAT, self.topic))
        path = os.path.join(self.tmp, '%s.conf' % host)
        with open(path, 'w') as f:
            f.write(text)
        conf = agent_cmd.make_conf(['--config-file', path])
        publisher = agent_cmd.build_publisher(conf)
        self.addCleanup(publisher.close)
        return publisher


class CellsBusTest(VhostTestCase):

    # -- nova-scheduler, an API-level service ------------------------------

    def scheduler(self, notification_vhost=None):
        """This process as a scheduler worker with an API-level nova.conf.

        Returns its live-state cache, fed by its real listener.
        """
        # Creating a transport registers oslo.messaging's options.
        oslo_messaging.get_notification_transport(
            ca_conf.CONF, url=url(self.api)).cleanup()
        fixture = self.useFixture(config_fixture.Config(ca_conf.CONF))
        # Nova sets control_exchange (nova) at the start of every service.
        fixture.config(transport_url=url(self.api), control_exchange='nova')
        if notification_vhost:
            fixture.config(transport_url=url(notification_vhost),
                           group='oslo_messaging_notifications')
        fixture.config(listen_for_host_state=True, host_state_ttl=TTL,
                       host_state_topic=self.topic,
                       host_state_pool_prefix=self.prefix,
                       group='cacheaware_scheduler')
        made = []
        real = oslo_messaging.get_notification_transport

        def recorded(*args, **kwargs):
            made.append(real(*args, **kwargs))
            return made[-1]

        # live_state keeps its transport for the life of the process; the
        # test closes it (a pooled connection would outlive the vhost).
        with fixtures.MonkeyPatch('oslo_messaging.get_notification_transport',
                                  recorded):
            cache = live_state.get_cache()
        self.assertIsNotNone(live_state._process['listener'])
        self.addCleanup(self._stop_scheduler, made)
        return cache

    @staticmethod
    def _stop_scheduler(transports):
        live_state.reset()
        for transport in transports:
            transport.cleanup()

    def second_worker(self):
        """Another scheduler worker (same nova.conf) and its claim ledger."""
        pool = notifications.process_pool_name(self.prefix, 'sched-b', 2)
        ledger = claims.ClaimLedger(memory=120, settle=60)
        cache = state_cache.HostStateCache(ttl=TTL)
        transport = oslo_messaging.get_notification_transport(ca_conf.CONF)
        self.addCleanup(transport.cleanup)
        listener = notifications.start_host_state_listener(
            transport, cache, self.topic, pool,
            endpoints=[claim_share.HostClaimEndpoint(lambda: ledger, pool)])
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        return cache, ledger

    def assertStateOf(self, host, cache):
        self.assertTrue(bus.wait_for(lambda: cache.get(host)), host)
        got = cache.get(host)
        self.assertEqual(
            (True, ('L3-0', 'L3-1'), (VM,), [VM]),
            (got.agent_healthy, tuple(d.id for d in got.domains),
             got.domains[0].memory_bound_vms, list(got.instance_uuids)))

    def keep_heard(self, agent, host, cache, seconds):
        """Let ``agent`` run its passes for ``seconds``, then until heard.

        Unchanged, its state goes out as heartbeats (every HEARTBEAT s).
        """
        start = time.monotonic()
        while (time.monotonic() - start < seconds
               or cache.live_view(host).age > HEARTBEAT):
            self.assertLess(time.monotonic() - start, seconds + bus.WAIT)
            time.sleep(HEARTBEAT / 4.0)
            self.assertTrue(agent.publish(REPORT))

    def test_cell_agent_reaches_the_api_level_scheduler(self):
        cache = self.scheduler()
        agent = self.agent('cell1-cn-1', url(self.api))
        self.assertTrue(agent.publish(REPORT))
        self.assertStateOf('cell1-cn-1', cache)
        self.assertIsNone(ineligible(cache, 'cell1-cn-1'))
        # The cell bus carries nothing of ours.
        self.assertQueues({}, self.cell)

    def test_without_notification_transport_the_state_stays_in_the_cell(self):
        cache = self.scheduler()
        lost = self.agent('cell1-cn-2')
        # Delivered, to the cell bus: the agent has nothing to complain of.
        self.assertTrue(lost.publish(REPORT))
        self.assertEqual((1, 0), (lost.sent, lost.failed))
        # oslo.messaging's sender keeps it in <topic>.info, unread.
        self.assertQueues({'%s.info' % self.topic: 1}, self.cell)
        # Every agent on its cell bus: the scheduler's bus is silent, and
        # Placement decides (failure-modes, rule 3).
        self.assertIsNone(cache.get('cell1-cn-2'))
        self.assertIsNone(ineligible(cache, 'cell1-cn-2'))

        # An agent of the same cell that names the API-level bus is heard.
        good = self.agent('cell1-cn-1', url(self.api))
        self.assertTrue(good.publish(REPORT))
        self.assertStateOf('cell1-cn-1', cache)
        # Past warm-up (ttl / 2), that agent heard all along, the host
        # whose state stays in its cell is refused for All-share and Clean.
        self.keep_heard(good, 'cell1-cn-1', cache, TTL / 2.0 + 0.5)
        self.assertIsNone(cache.get('cell1-cn-2'))
        self.assertIsNone(ineligible(cache, 'cell1-cn-1'))
        self.assertIn('no live state from its nova-cacheaware agent since '
                      'this scheduler started listening',
                      ineligible(cache, 'cell1-cn-2'))
        self.assertQueues({'%s.info' % self.topic: 1}, self.cell)

    def test_scheduler_workers_share_claims_on_the_api_level_bus(self):
        cache_a = self.scheduler()
        cache_b, ledger_b = self.second_worker()
        agent = self.agent('cell1-cn-1', url(self.api))
        self.assertTrue(agent.publish(REPORT))
        for cache in (cache_a, cache_b):
            self.assertStateOf('cell1-cn-1', cache)
        # Worker a sees its hand-out on the cell host claimed.
        opts = ca_conf.CONF.cacheaware_scheduler
        ledger_a = claims.get_ledger(opts.claim_memory_seconds,
                                     opts.claim_settle_seconds,
                                     opts.claim_pending_seconds)
        other = '5b0d4c3e-2a1f-4e6d-8c7b-9a0e1f2d3c4b'
        ledger_a.hand_out('cell1-cn-1', 1, claims.Claim(
            None, other, 2, True, ledger_a.now()), resolve=lambda: 'L3-1')
        ledger_a.observe('cell1-cn-1', 2)
        self.assertTrue(bus.wait_for(lambda: ledger_b.claims('cell1-cn-1')))
        (got,) = ledger_b.claims('cell1-cn-1')
        self.assertEqual(('L3-1', other, 2, True),
                         (got.provider, got.instance, got.vcpus,
                          got.memory_bound))
        self.assertQueues({}, self.cell)

    def test_a_dedicated_notification_bus(self):
        # Nova's own advice for several cells: one notification bus, named
        # in every service's [oslo_messaging_notifications].
        notify = self.vhost('notify')
        cache = self.scheduler(notification_vhost=notify)
        agent = self.agent('cell1-cn-1', url(notify))
        self.assertTrue(agent.publish(REPORT))
        self.assertStateOf('cell1-cn-1', cache)
        self.assertQueues({}, self.cell)
        self.assertQueues({}, self.api)
        # The scheduler's queue is read; the sender's default queue
        # (<topic>.info) keeps every state (doc/source/admin/cells.rst).
        self.assertQueues({notifications.process_pool_name(self.prefix): 0,
                           '%s.info' % self.topic: 1}, notify)

    def test_an_agent_user_that_may_send_the_state_only(self):
        # The API-level bus carries Nova's RPC on the same exchange (nova):
        # the agents' user may declare, bind and publish <topic>.info only
        # (doc/source/admin/cells.rst).
        user = 'ca_agent_%s' % self.run_id
        password = uuid.uuid4().hex
        self.assertEqual(0, rabbitmqctl('add_user', user, password).returncode)
        self.addCleanup(rabbitmqctl, 'delete_user', user)
        state = re.escape('%s.info' % self.topic)
        for args in (('set_permissions', '-p', self.api, user,
                      '^(nova|%s)$' % state, '^(nova|%s)$' % state, '^nova$'),
                     ('set_topic_permissions', '-p', self.api, user, 'nova',
                      '^%s$' % state, '^%s$' % state)):
            done = rabbitmqctl(*args)
            self.assertEqual(0, done.returncode, done.stderr)
        cache = self.scheduler()
        agent = self.agent('cell1-cn-1', url(self.api, (user, password)))
        self.assertTrue(agent.publish(REPORT))
        self.assertStateOf('cell1-cn-1', cache)
        # A call to nova-scheduler's RPC topic is refused.
        with kombu.Connection(url(self.api, (user, password), 'amqp'),
                              connect_timeout=5) as conn:
            nova = kombu.Exchange('nova', type='topic', durable=False)

            def call_the_scheduler():
                conn.Producer(exchange=nova).publish(
                    {}, routing_key='scheduler')
                conn.drain_events(timeout=5)
            e = self.assertRaises(amqp.exceptions.AccessRefused,
                                  call_the_scheduler)
        self.assertIn("topic 'scheduler'", str(e))
