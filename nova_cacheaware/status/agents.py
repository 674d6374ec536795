"""Asking one agent for its host view over oslo.messaging RPC.

The client of :mod:`nova_cacheaware.agent.rpc`: topic ``[cacheaware_status]
agent_rpc_topic``, server the host, a call that gives up after
``rpc_timeout`` seconds (an agent that is down or not upgraded does not
answer).
"""

import oslo_messaging

from nova_cacheaware.agent import rpc as agent_rpc


class AgentUnavailable(Exception):
    """The agent did not answer (in time), or has no pass to describe."""


class AgentClient:
    """``describe_host(host)`` and ``describe_server(host, uuid)``."""

    def __init__(self, transport, topic, timeout):
        self._client = oslo_messaging.get_rpc_client(
            transport, oslo_messaging.Target(
                topic=topic, namespace=agent_rpc.NAMESPACE,
                version=agent_rpc.RPC_VERSION),
            timeout=timeout)
        self._timeout = timeout

    def _call(self, host, method, **kwargs):
        try:
            answer = self._client.prepare(server=host).call(
                {}, method, **kwargs)
        except oslo_messaging.MessagingTimeout:
            raise AgentUnavailable(
                'the agent of host %s did not answer within %.0f s (is '
                'nova-cacheaware-agent running there, with [agent] '
                'notifications and [cacheaware_status] agent_rpc on?)'
                % (host, self._timeout)) from None
        except oslo_messaging.MessagingException as e:
            raise AgentUnavailable('cannot ask the agent of host %s: %s'
                                   % (host, e)) from None
        return answer

    def describe_host(self, host):
        """The host's view document; :class:`AgentUnavailable` if none."""
        view = self._call(host, 'describe_host')
        if view is None:
            raise AgentUnavailable('the agent of host %s has not completed '
                                   'a pass yet' % host)
        return view

    def describe_server(self, host, uuid):
        """The server's entry plus ``host``; None when not on that host."""
        return self._call(host, 'describe_server', uuid=uuid)
