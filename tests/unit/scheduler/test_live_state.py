"""One host-state cache (and listener) per process."""

import os

import fixtures
from oslo_config import fixture as config_fixture
import oslo_messaging
import testtools

from nova_cacheaware import conf as ca_conf
from nova_cacheaware.scheduler import live_state


class LiveStateTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(ca_conf.CONF))
        live_state.reset()
        self.addCleanup(live_state.reset)

    def test_same_cache_in_a_process_new_one_after_fork(self):
        self.conf.config(listen_for_host_state=False, host_state_ttl=42,
                         group='cacheaware_scheduler')
        first = live_state.get_cache()
        self.assertIs(first, live_state.get_cache())
        self.assertEqual(42, first.ttl)
        # A forked worker gets its own cache (exit status 0), and the
        # parent keeps its own.
        pid = os.fork()
        if pid == 0:
            try:
                child = live_state.get_cache()
                os._exit(0 if child is not first and child.ttl == 42 else 1)
            finally:
                os._exit(2)
        self.assertEqual(0, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        self.assertIs(first, live_state.get_cache())

    def test_listener_failure_leaves_plugins_without_live_state(self):
        self.conf.config(listen_for_host_state=True,
                         group='cacheaware_scheduler')
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_cacheaware.scheduler.live_state'))
        self.useFixture(fixtures.MockPatch(
            'oslo_messaging.get_notification_transport',
            side_effect=oslo_messaging.MessagingException('no bus')))
        cache = live_state.get_cache()
        self.assertIsNone(cache.get('any-host'))
        self.assertIn('No live cache state in this scheduler process: '
                      'cannot listen on topic cacheaware_host_state: no bus',
                      log.output)
