"""When the agent runs its describe RPC server, and on which bus."""

from unittest import mock

import fixtures
import testtools

from nova_cacheaware.agent import capability
from nova_cacheaware.agent import describe
from nova_cacheaware.agent import rpc
from nova_cacheaware.agent import service
from nova_cacheaware.cmd import agent as agent_cmd


def agent_conf(test, text):
    path = test.useFixture(fixtures.TempDir()).path + '/agent.conf'
    with open(path, 'w') as f:
        f.write(text)
    return agent_cmd.make_conf(['--config-file', path])


class ServeTest(testtools.TestCase):

    def test_off_without_notifications_or_when_disabled(self):
        for text in ('[agent]\nnotifications = false\n',
                     '[agent]\nnotifications = true\n'
                     '[cacheaware_status]\nagent_rpc = false\n'):
            conf = agent_conf(self, text)
            self.assertIsNone(rpc.serve(conf, mock.Mock(), 'cmp-1'))
            self.assertIsNone(agent_cmd._describe_rpc(conf, mock.Mock()))

    def test_on_the_notification_bus_as_the_host(self):
        conf = agent_conf(self, '[DEFAULT]\ntransport_url = rabbit://a/\n'
                                '[agent]\nnotifications = true\n'
                                'period_s = 20\n'
                                '[oslo_messaging_notifications]\n'
                                'transport_url = rabbit://api-bus/\n'
                                '[placement]\nprovider_model = domain\n')
        with mock.patch.object(rpc, 'start_server', autospec=True) as start, \
                mock.patch('oslo_messaging.get_rpc_transport',
                           autospec=True) as get:
            server = rpc.serve(conf, mock.sentinel.agent, 'cmp-1')
        self.assertIs(start.return_value, server)
        self.assertEqual('rabbit://api-bus/', get.call_args[1]['url'])
        transport, topic, host, (endpoint, request) = start.call_args[0]
        self.assertEqual(('cacheaware-agent', 'cmp-1', 'cmp-1',
                          describe.PER_DOMAIN, 60.0),
                         (topic, host, endpoint.host, endpoint.model,
                          endpoint.stale_s))
        # The schedulers' state requests, answered within the spread.
        self.assertEqual(20.0, request.spread_s)

    def test_a_bus_that_fails_leaves_the_agent_running(self):
        conf = agent_conf(self, '[agent]\nnotifications = true\n')
        with mock.patch.object(rpc, 'start_server', autospec=True,
                               side_effect=OSError('refused')):
            self.assertIsNone(rpc.serve(conf, mock.Mock(), 'cmp-1'))


class StateRequestEndpointTest(testtools.TestCase):
    """``send_state``: when the agent's publisher sends its full state."""

    def endpoint(self, draw):
        agent = mock.Mock(spec=['publisher'])
        return rpc.StateRequestEndpoint(agent, 20.0, draw=lambda: draw), \
            agent.publisher

    def test_a_starting_scheduler_gets_it_within_the_spread(self):
        endpoint, publisher = self.endpoint(0.25)
        endpoint.send_state({})
        publisher.request_state.assert_called_once_with(5.0)

    def test_one_host_asked_gets_it_at_the_next_pass(self):
        endpoint, publisher = self.endpoint(0.25)
        endpoint.send_state({}, spread=False)
        publisher.request_state.assert_called_once_with(0.0)

    def test_anything_but_true_is_no_spread(self):
        endpoint, publisher = self.endpoint(0.9)
        endpoint.send_state({}, spread='yes')
        publisher.request_state.assert_called_once_with(0.0)

    def test_an_agent_without_a_bus_publisher_ignores_it(self):
        agent = mock.Mock(spec=['publisher'])
        agent.publisher = object()
        rpc.StateRequestEndpoint(agent, 20.0).send_state({})


class LastPassTest(testtools.TestCase):
    """What a pass leaves for the describe RPC."""

    def test_newest_report_with_vms_of_each_capability(self):
        older = {'vms': {'a': {'status': 'ok'}}, 'held_mib': 64}
        agent = mock.Mock(last_reports={'balloon': older})
        agent.reconcile.return_value = mock.Mock(capabilities={
            # A balloon pass between rounds reports no VMs: the round's
            # report stays; a failed capability reports no VMs either.
            'balloon': {'held_mib': 64},
            'vcpu_sizing': {'vms': {'a': {'mode': 'off'}}},
            'numa_balance': capability.Failed('boom')})
        one = service.Agent.reconcile_safely(agent)
        self.assertIs(agent.reconcile.return_value, one)
        self.assertIs(one, agent.last_pass)
        self.assertEqual({'balloon': older,
                          'vcpu_sizing': {'vms': {'a': {'mode': 'off'}}}},
                         agent.last_reports)
