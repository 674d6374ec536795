"""A scheduler worker asks the agents for their state: what it casts."""

from unittest import mock

import testtools

from nova_cacheaware.scheduler import state_requests


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class StateRequesterTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = Clock()
        patcher = mock.patch('oslo_messaging.get_rpc_client',
                             autospec=True)
        get_client = patcher.start()
        self.addCleanup(patcher.stop)
        self.client = get_client.return_value
        self.requester = state_requests.StateRequester(
            mock.sentinel.transport, 'cacheaware-agent', clock=self.clock)
        target = get_client.call_args[0][1]
        self.assertEqual(('cacheaware-agent', 'cacheaware_state', '1.0'),
                         (target.topic, target.namespace, target.version))

    def prepared(self):
        return [c.kwargs for c in self.client.prepare.call_args_list]

    def test_everyone_is_one_fanout_with_spread(self):
        self.assertTrue(self.requester.everyone())
        self.assertEqual([{'fanout': True}], self.prepared())
        self.client.prepare.return_value.cast.assert_called_once_with(
            {}, 'send_state', spread=True)

    def test_one_host_at_most_once_a_minute_and_not_right_after_all(self):
        self.requester.everyone()
        self.clock.now += 59
        self.assertFalse(self.requester.host('h1'))
        self.clock.now += 1
        self.assertTrue(self.requester.host('h1'))
        self.assertTrue(self.requester.host('h2'))
        self.clock.now += 30
        self.assertFalse(self.requester.host('h1'))
        self.clock.now += 30
        self.assertTrue(self.requester.host('h1'))
        self.assertEqual([{'fanout': True}, {'server': 'h1'},
                          {'server': 'h2'}, {'server': 'h1'}],
                         self.prepared())
        self.client.prepare.return_value.cast.assert_called_with(
            {}, 'send_state', spread=False)

    def test_without_a_request_to_all_the_first_ask_goes(self):
        self.assertTrue(self.requester.host('h1'))
        self.assertFalse(self.requester.host('h1'))

    def test_a_bus_that_refuses_is_logged_not_raised(self):
        self.client.prepare.return_value.cast.side_effect = OSError('down')
        self.assertFalse(self.requester.everyone())
        self.clock.now += 60
        self.assertFalse(self.requester.host('h1'))
        # Not asked again before the interval: the bus is not hammered.
        self.client.prepare.return_value.cast.side_effect = None
        self.assertFalse(self.requester.host('h1'))

    def test_the_memory_of_hosts_asked_stays_bounded(self):
        for n in range(3000):
            self.clock.now += 0.1
            self.requester.host('h%d' % n)
        self.assertLessEqual(len(self.requester._asked), 1025)
