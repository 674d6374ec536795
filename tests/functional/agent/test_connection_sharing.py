"""A libvirt connection replaced while another thread uses it.

The agent's threads share one connection; its event subscription (at start)
and a reconnect replace it. A connection closed under a call in flight
crashed libvirt-python (``vcpuPinInfo`` during the agent's start, seen in
the private-libvirtd restart test), so a dropped connection is closed only
when its last call returns. Against libvirt's real test:///default driver.
"""

import socket

import libvirt
import testtools

from nova_cacheaware.virt import connection


class ReplacedUnderACallTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.port = connection.Connection('test:///default')
        self.addCleanup(self.port.unsubscribe)

    def test_the_old_connection_closes_when_the_call_returns(self):
        seen = {}

        def use(conn):
            with self.port._lock:
                self.port._drop()     # what a subscribe or reconnect does
            # Still open for the call that holds it ...
            seen['alive'] = conn.isAlive()
            seen['hostname'] = conn.getHostname()
            seen['conn'] = conn
            return 'done'

        self.assertEqual('done', self.port.call(use))
        self.assertEqual((1, socket.gethostname()),
                         (seen['alive'], seen['hostname']))
        # ... and closed once it returned: libvirt-python refuses it.
        self.assertRaises((libvirt.libvirtError, AttributeError),
                          seen['conn'].getHostname)
        # The next call opens a new one.
        self.assertIsNot(seen['conn'], self.port.call(lambda c: c))
        self.assertEqual({}, self.port._users)
        self.assertEqual({}, self.port._closing)

    def test_nested_calls_keep_it_open_until_the_outer_one_returns(self):
        seen = []

        def inner(conn):
            with self.port._lock:
                self.port._drop()
            return conn

        def outer(conn):
            self.assertIs(conn, self.port.call(lambda c: c))
            # The inner call dropped the shared connection; the outer one
            # still holds the old object.
            self.port.call(inner)
            seen.append(conn.getHostname())
            return conn

        old = self.port.call(outer)
        self.assertEqual([socket.gethostname()], seen)
        self.assertRaises((libvirt.libvirtError, AttributeError),
                          old.getHostname)

    def test_a_connection_nobody_uses_closes_at_once(self):
        conn = self.port.call(lambda c: c)
        with self.port._lock:
            self.port._drop()
        self.assertRaises((libvirt.libvirtError, AttributeError),
                          conn.getHostname)
