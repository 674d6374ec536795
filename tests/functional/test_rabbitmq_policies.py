"""The RabbitMQ policies of ``deploy/rabbitmq/cacheaware-policies.sh``.

On the machine's real RabbitMQ, in vhosts of the test's own: a real
agent's publisher fills the default queue that oslo.messaging declares and
no scheduler reads; with the policies it keeps only the newest states, and
a stopped scheduler worker's queue expires.
"""

import os
import subprocess

import kombu

from nova_cacheaware.agent import reporting
from tests.functional import test_cells_bus as cells
from tests.functional import test_host_state_bus as bus

SCRIPT = os.path.join(os.path.dirname(__file__), '..', '..', 'deploy',
                      'rabbitmq', 'cacheaware-policies.sh')


def report(n):
    """An agent report whose content differs with ``n``: a new state."""
    return reporting.HostReport(memory_vms={'L3-0': ()},
                                usable_cpus={'L3-0': n + 1})


class PoliciesTest(cells.VhostTestCase):

    def policies(self, *args):
        done = subprocess.run(
            ['bash', SCRIPT, '-p', self.api, '--topic', self.topic,
             '--pool-prefix', self.prefix,
             '--status-prefix', 'cacheaware-status'] + list(args),
            capture_output=True, text=True, timeout=120)
        self.assertEqual(0, done.returncode, done.stderr)
        return done.stdout

    def test_default_queue_keeps_only_the_newest_states(self):
        self.assertIn('set on vhost %s' % self.api,
                      self.policies('--max-length', '5'))
        agent = self.agent('cmp-1', notification_url=cells.url(self.api))
        for n in range(12):
            self.assertTrue(agent.publish(report(n)))
        # Nobody reads TOPIC.info: without the policy it would hold 12.
        self.assertQueues({'%s.info' % self.topic: 5}, self.api)

    def test_a_stopped_workers_queue_expires(self):
        # Long enough that listing the queues (rabbitmqctl, seconds on a
        # loaded machine) sees them before they expire.
        self.policies('--expires-ms', '8000')
        # A scheduler worker's and a nova-cacheaware-api process's.
        # (The vhost is the test's own: the API's default prefix is safe.)
        names = ['%s-sched-1' % self.prefix, 'cacheaware-status-api-1']
        with kombu.Connection(cells.url(self.api, scheme='amqp')) as conn:
            for queue in names:
                kombu.Queue(queue, channel=conn.channel()).declare()
        for queue in names:
            self.assertIn(queue, self.queues(self.api))
        # Unused (no consumer, no declaration) for 8 s: deleted.
        bus.wait_for(lambda: not set(names) & set(self.queues(self.api)), 30)
        self.assertEqual(set(), set(names) & set(self.queues(self.api)))

    def test_relay_queues(self):
        self.policies('--relay-pool', 'relay-x', '--relay-ttl-ms', '5000')
        out = cells.rabbitmqctl('list_policies', '-p', self.api,
                                '--no-table-headers')
        self.assertEqual(0, out.returncode, out.stderr)
        # vhost, name, pattern, apply-to, definition, priority
        got = {f[1]: (f[2], f[4]) for f in (
            line.split('\t') for line in out.stdout.splitlines()
            if line.strip())}
        self.assertEqual(('^relay\\-x$', '{"message-ttl":5000}'),
                         got['cacheaware-relay-queue'])
        self.assertEqual('^relay\\-x-want-',
                         got['cacheaware-relay-want-queues'][0])

    def test_bad_arguments_exit_2_in_one_line(self):
        done = subprocess.run(['bash', SCRIPT, '--max-length', 'many'],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual((2, 1), (done.returncode,
                                  len(done.stderr.splitlines())))
