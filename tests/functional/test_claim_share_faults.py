"""Claim sharing when the broker dies: a private RabbitMQ node, killed.

Each test starts its own RabbitMQ node (own node name, AMQP and
distribution ports, Mnesia and log directories in a temporary directory,
its own config: the machine's shared broker is never touched), runs a
scheduler worker's :class:`~nova_cacheaware.scheduler.claim_share.
ClaimPublisher` and another worker's listener on it, kills the node with
SIGKILL and starts it again on the same port. The scheduling path only
queues claims: the calls return while the broker is gone, every network
send runs on the publisher's own thread, and sharing resumes once the
broker is back.

Skipped when no RabbitMQ server can be started here
(``NOVA_CACHEAWARE_RABBITMQ_SERVER`` names the ``rabbitmq-server`` script
to use; the Debian/Ubuntu one is found by default).
"""

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid

import fixtures
import kombu
from oslo_config import cfg
import oslo_messaging
import testtools

from nova_cacheaware import notifications
from nova_cacheaware.scheduler import claim_share
from nova_cacheaware.scheduler import claims
from nova_cacheaware.scheduler import state_cache

#: The server script itself, not the distribution's wrapper that switches
#: to the ``rabbitmq`` user and its files.
SERVER_CANDIDATES = ('/usr/lib/rabbitmq/bin/rabbitmq-server',
                     '/usr/local/sbin/rabbitmq-server')
START_TIMEOUT = 90.0
WAIT = 90.0


def server_script():
    """The rabbitmq-server script to run, or None."""
    named = os.environ.get('NOVA_CACHEAWARE_RABBITMQ_SERVER')
    for path in ((named,) if named else SERVER_CANDIDATES):
        if path and os.access(path, os.X_OK):
            return path
    return None


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout=WAIT, step=0.1, between=None):
    """Poll ``predicate``; ``between()`` runs before each retry."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if between is not None:
            between()
        time.sleep(step)
    return predicate()


class PrivateRabbit(fixtures.Fixture):
    """A RabbitMQ node of this test only, on loopback ports of its own."""

    def __init__(self, script):
        super().__init__()
        self.script = script
        self.proc = None

    def _setUp(self):
        top = self.useFixture(fixtures.TempDir()).path
        self.port, dist = free_port(), free_port()
        self.url = 'rabbit://guest:guest@127.0.0.1:%d/' % self.port
        paths = {name: os.path.join(top, name) for name in (
            'rabbitmq.conf', 'rabbitmq-env.conf', 'enabled_plugins',
            'mnesia', 'log', 'node.log')}
        with open(paths['rabbitmq.conf'], 'w') as f:
            f.write('listeners.tcp.local = 127.0.0.1:%d\n' % self.port)
        with open(paths['rabbitmq-env.conf'], 'w') as f:
            f.write('')
        with open(paths['enabled_plugins'], 'w') as f:
            f.write('[].\n')
        self.log_path = paths['node.log']
        node = 'cacheaware-t%s@localhost' % uuid.uuid4().hex[:8]
        self.env = dict(
            os.environ, HOME=top, RABBITMQ_NODENAME=node,
            RABBITMQ_NODE_IP_ADDRESS='127.0.0.1',
            RABBITMQ_NODE_PORT=str(self.port), RABBITMQ_DIST_PORT=str(dist),
            RABBITMQ_MNESIA_BASE=paths['mnesia'],
            RABBITMQ_LOG_BASE=paths['log'],
            RABBITMQ_CONFIG_FILE=paths['rabbitmq.conf'],
            RABBITMQ_CONF_ENV_FILE=paths['rabbitmq-env.conf'],
            RABBITMQ_ENABLED_PLUGINS_FILE=paths['enabled_plugins'],
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=(
                '-kernel inet_dist_use_interface {127,0,0,1}'),
            ERL_EPMD_ADDRESS='127.0.0.1',
            # The script then execs the Erlang VM: our child is the node.
            RUNNING_UNDER_SYSTEMD='true')
        self.addCleanup(self.kill)
        self.start()

    def _reachable(self):
        try:
            with kombu.Connection(
                    'amqp://guest:guest@127.0.0.1:%d//' % self.port,
                    connect_timeout=2) as conn:
                conn.connect()
            return True
        except OSError:
            return False

    def start(self):
        """Start the node and wait until it accepts AMQP connections."""
        with open(self.log_path, 'ab') as log:
            self.proc = subprocess.Popen(
                [self.script], env=self.env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        if not wait_for(lambda: self._reachable() or
                        self.proc.poll() is not None,
                        timeout=START_TIMEOUT, step=0.5) or \
                self.proc.poll() is not None:
            self.kill()
            with open(self.log_path, errors='replace') as f:
                tail = f.read()[-1500:]
            raise RuntimeError('private RabbitMQ node did not start: %s'
                               % tail)

    def kill(self):
        """SIGKILL the node and everything it started (its own session)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)


@testtools.skipUnless(server_script() and shutil.which('erl'),
                      'no rabbitmq-server script to start a private node')
class BrokerKilledTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        try:
            self.rabbit = self.useFixture(PrivateRabbit(server_script()))
        except RuntimeError as e:
            self.skipTest(str(e))
        run = uuid.uuid4().hex[:12]
        self.topic = 'cacheaware_fault_%s' % run
        self.conf = cfg.ConfigOpts()
        self.conf([], project='cacheaware-test')
        # The first transport registers the driver's options; reconnect
        # quickly once the node is back (the default backs off to 30 s).
        oslo_messaging.get_notification_transport(
            self.conf, url=self.rabbit.url).cleanup()
        self.conf.set_override('rabbit_interval_max', 2,
                               group='oslo_messaging_rabbit')
        self.transport = oslo_messaging.get_notification_transport(
            self.conf, url=self.rabbit.url)
        self.addCleanup(self.transport.cleanup)

    def _listener(self, pool, ledger):
        listener = notifications.start_host_state_listener(
            self.transport, state_cache.HostStateCache(ttl=60), self.topic,
            pool, endpoints=[claim_share.HostClaimEndpoint(lambda: ledger,
                                                           pool)])
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)

    def _claim(self, instance):
        return claims.Claim('L3-1', instance, 2, True, 0.0)

    def test_enqueue_never_waits_for_a_dead_broker_and_sharing_resumes(self):
        ledger_b = claims.ClaimLedger(memory=600, settle=600)
        self._listener('cacheaware-fault-b-%s' % self.topic, ledger_b)
        publisher = claim_share.ClaimPublisher(
            self.transport, self.topic, 'worker-a', size=8)
        self.addCleanup(publisher.stop, 10)
        send = publisher._send
        senders = []

        def recording_send(host, claim):
            senders.append(threading.current_thread().name)
            return send(host, claim)

        publisher._send = recording_send
        # Sharing works: worker b's ledger counts a's claim.
        self.assertTrue(wait_for(
            lambda: ledger_b.claims('cn-1'), step=0.5,
            between=lambda: publisher('cn-1', self._claim('vm-0'))))

        self.assertTrue(wait_for(lambda: publisher.queued == (
            publisher.sent + publisher.failed + publisher.dropped)))
        self.rabbit.kill()
        before = (publisher.queued, publisher.sent)
        returned = 0
        for index in range(40):
            publisher('cn-2', self._claim('vm-%d' % index))
            returned += 1
        # Forty calls returned with no broker; the sender reports the
        # failures (and drops beyond its 8 places) on its own thread.
        self.assertEqual(40, returned)
        self.assertEqual(before[0] + 40, publisher.queued)
        self.assertTrue(wait_for(lambda: publisher.failed > 0 and (
            publisher.queued == publisher.sent + publisher.failed
            + publisher.dropped)))
        # At most the first write can pass: the kernel may accept it on a
        # socket whose peer just died. None arrives.
        self.assertLessEqual(publisher.sent - before[1], 1)
        self.assertEqual([], ledger_b.claims('cn-2'))

        self.rabbit.start()
        # Both sides reconnect: a's new claims reach b again.
        self.assertTrue(wait_for(
            lambda: ledger_b.claims('cn-3'), step=0.5,
            between=lambda: publisher('cn-3', self._claim('vm-back'))))
        self.assertGreater(publisher.sent, before[1])
        self.assertTrue(publisher.stop(timeout=30))
        self.assertEqual(publisher.queued, publisher.sent + publisher.failed
                         + publisher.dropped)
        self.assertEqual({'cacheaware-claim-share'}, set(senders))
