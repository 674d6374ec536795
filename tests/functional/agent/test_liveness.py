"""A killed, stopped and restarted ``nova-cacheaware-agent``, for real.

Two agent processes (libvirt's ``test:///default`` driver each) report to
the real Placement WSGI service on MariaDB and publish
``cacheaware.host.state`` over the machine's RabbitMQ. This process plays
the scheduler: a real listener feeds the real host-state cache that the
real ``CacheDomainFilter`` reads. ``kill -9`` of one agent must make the
filter refuse All-share requests for its host within ``host_state_ttl``;
a restart makes it eligible again; SIGTERM takes the agent's trait off
its compute node provider.
"""

import os
import signal
import subprocess
import sys
import time
import uuid as uuid_mod

import fixtures
import kombu
from oslo_config import cfg
from oslo_config import fixture as config_fixture
import oslo_messaging

from nova import objects
from nova.scheduler import host_manager

from nova_cacheaware import conf as ca_conf
from nova_cacheaware.contracts import placement as names
from nova_cacheaware import notifications
from nova_cacheaware.scheduler import filters
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import state_cache
from tests.functional.agent import test_faults
from tests.functional import base
from tests.functional import test_host_state_bus as bus
from tests import placement_fixtures

objects.register_all()
TTL = 4.0
PERIOD = 1.0
ALL_SHARE = {'cacheaware:cache_share': 'all'}


def request(vcpus=2):
    flavor = objects.Flavor(flavorid='f1', vcpus=vcpus, memory_mb=512,
                            root_gb=1, ephemeral_gb=0, swap=0,
                            extra_specs=dict(ALL_SHARE))
    return objects.RequestSpec(flavor=flavor, num_instances=1)


class AgentLivenessTest(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.require(bus.rabbit_reachable(), 'RabbitMQ on 127.0.0.1:5672')
        self.require(placement_fixtures.mariadb_available(),
                     'MariaDB for Placement')
        self.placement = self.useFixture(
            placement_fixtures.PlacementService())
        self.client = self.placement.client
        self.tmp = self.useFixture(fixtures.TempDir()).path
        run = uuid_mod.uuid4().hex[:12]
        self.exchange = 'cacheaware-test-%s' % run
        self.topic = 'cacheaware_test_%s' % run
        self.pool = 'cacheaware-test-%s' % run
        self.cache = self._listen()
        self.procs = {}

    # -- the scheduler side ------------------------------------------------

    def _listen(self):
        conf = cfg.ConfigOpts()
        conf([], project='cacheaware-test')
        oslo_messaging.get_notification_transport(
            conf, url=bus.RABBIT_URL).cleanup()
        conf.set_override('control_exchange', self.exchange)
        transport = oslo_messaging.get_notification_transport(
            conf, url=bus.RABBIT_URL)
        self.addCleanup(self._delete_rabbit_objects)
        self.addCleanup(transport.cleanup)
        cache = state_cache.HostStateCache(ttl=TTL)
        listener = notifications.start_host_state_listener(
            transport, cache, self.topic, self.pool)
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        # This process is the scheduler worker: the filter reads this
        # cache (fed by the real listener), under the default rule.
        self.useFixture(config_fixture.Config(ca_conf.CONF)).config(
            stale_host_state='refuse', group='cacheaware_scheduler')
        live_state.reset()
        self.addCleanup(live_state.reset)
        live_state._process.update(pid=os.getpid(), cache=cache,
                                   listener=None)
        return cache

    def _delete_rabbit_objects(self):
        with kombu.Connection(bus.KOMBU_URL) as conn:
            channel = conn.channel()
            channel.queue_delete(self.pool)
            # The agents' describe RPC server queues (topic, per host).
            rpc_topic = '%s-rpc' % self.topic
            for name in [rpc_topic] + ['%s.%s' % (rpc_topic, h)
                                       for h in self.procs]:
                channel.queue_delete(name)
            channel.exchange_delete(self.exchange)

    def eligible(self, host):
        """What the real filter says about an All-share request."""
        state = host_manager.HostState(host, host, 'cell1')
        state.allocation_candidates = [{'allocations': {
            'rp-%s' % host: {'resources': {names.RC_DOMAIN_VCPU: 2}}}}]
        return filters.CacheDomainFilter().host_passes(state, request())

    # -- the compute side --------------------------------------------------

    def compute_node(self, host):
        rp_uuid = str(uuid_mod.uuid4())
        self.client.post('/resource_providers', {'name': host,
                                                 'uuid': rp_uuid})
        return rp_uuid

    def has_trait(self, root):
        return test_faults.agent_trait_everywhere(self.client, root)

    def start_agent(self, host):
        conf = os.path.join(self.tmp, '%s.conf' % host)
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = %s\ncontrol_exchange = %s\n'
                    '[agent]\nlibvirt_uri = test:///default\n'
                    'spec_source = none\n'
                    'period_s = %s\nstate_heartbeat_s = %s\n'
                    'report_placement = true\n'
                    'hypervisor_hostname = %s\nnotifications = true\n'
                    'host = %s\n'
                    '[cacheaware_scheduler]\nhost_state_topic = %s\n'
                    '[cacheaware_status]\nagent_rpc_topic = %s-rpc\n'
                    '[placement]\nauth_type = admin_token\nendpoint = %s\n'
                    'token = admin\n'
                    '[topology]\nsource = libvirt\n'
                    'libvirt_uri = test:///default\n'
                    % (bus.RABBIT_URL, self.exchange, PERIOD, PERIOD,
                       host, host,
                       self.topic, self.topic, self.placement.endpoint))
        log = open(os.path.join(self.tmp, '%s.log' % host), 'a')
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [sys.executable, '-m', 'nova_cacheaware.cmd.agent',
             '--config-file', conf], stdout=subprocess.DEVNULL, stderr=log)
        self.addCleanup(self._end, proc)
        self.procs[host] = proc
        return proc

    @staticmethod
    def _end(proc):
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    def agent_log(self, host):
        with open(os.path.join(self.tmp, '%s.log' % host)) as f:
            return f.read()

    def test_kill_restart_and_clean_stop(self):
        roots = {h: self.compute_node(h) for h in ('cn-a', 'cn-b')}
        for host in roots:
            self.start_agent(host)
        self.assertIsNotNone(test_faults.wait_until(
            lambda: all(self.cache.get(h) for h in roots)
            and all(self.has_trait(r) for r in roots.values()), 60))
        # Past the warm-up (ttl/2 of hearing the bus).
        time.sleep(TTL / 2)
        self.assertEqual([True, True],
                         [self.eligible(h) for h in sorted(roots)])

        # kill -9: nothing withdraws the trait, the live state goes stale.
        self.procs['cn-a'].send_signal(signal.SIGKILL)
        self.procs['cn-a'].wait()
        refused = test_faults.wait_until(lambda: not self.eligible('cn-a'),
                                         TTL + 10)
        self.assertIsNotNone(refused)
        self.assertLessEqual(refused, TTL + 1.0)
        self.assertTrue(self.has_trait(roots['cn-a']))
        self.assertTrue(self.eligible('cn-b'))

        # Restart: the trait is re-asserted and the host eligible again.
        started = time.monotonic()
        self.start_agent('cn-a')
        back = test_faults.wait_until(lambda: self.eligible('cn-a'), 60)
        self.assertIsNotNone(back)

        # SIGTERM: a clean stop takes the trait off its providers.
        stop = time.monotonic()
        self.procs['cn-a'].send_signal(signal.SIGTERM)
        self.assertEqual(0, self.procs['cn-a'].wait(30))
        withdrawn = time.monotonic() - stop
        self.assertFalse(self.has_trait(roots['cn-a']))
        self.assertTrue(self.has_trait(roots['cn-b']))
        self.assertIn('CUSTOM_CACHEAWARE_AGENT removed from the cache '
                      'providers', self.agent_log('cn-a'))
        test_faults.record(
            'agent kill -9 / restart / SIGTERM', host_state_ttl_s=TTL,
            agent_period_s=PERIOD, refused_after_kill_s=round(refused, 2),
            eligible_after_restart_s=round(back, 2),
            restart_includes_process_start=True,
            trait_removed_by_sigterm_within_s=round(withdrawn, 2),
            since_restart_s=round(time.monotonic() - started, 2))
