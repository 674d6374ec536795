"""A scheduler worker asks the agents for their full state.

Agents send their full state when it changes and at their resync interval
(``[agent] state_resync_s``, 300 s), heartbeats between. A worker that
starts would otherwise know only the hosts whose state changes until each
agent's resync, and one that missed a state (lost, or sent before it
listened) would trust an older one until then. So a worker whose listener
starts casts ``send_state`` to every agent (a fanout on the agents' RPC
topic; they answer within their ``state_request_spread_s``), and one that
hears a heartbeat naming a state it does not hold asks that host again.
Requests are casts: nothing waits for an agent, and a bus that refuses
one is logged, never raised.
"""

import threading
import time

from oslo_log import log as logging
import oslo_messaging

from nova_cacheaware.contracts import state_wire

LOG = logging.getLogger(__name__)

#: Least seconds between two requests for one host's state; the request
#: to every agent counts for every host. An agent answers within a pass
#: plus its spread: asking again sooner only repeats the question.
HOST_INTERVAL_S = 60.0


class StateRequester:
    """Casts ``send_state`` to every agent or to one, rate-limited per host.

    :param transport: an RPC transport to the bus the agents' RPC servers
        listen on (the bus their states come from).
    :param topic: ``[cacheaware_scheduler] agent_rpc_topic``.
    """

    def __init__(self, transport, topic, clock=time.monotonic,
                 interval_s=HOST_INTERVAL_S):
        self._client = oslo_messaging.get_rpc_client(
            transport, oslo_messaging.Target(
                topic=topic, namespace=state_wire.STATE_REQUEST_NAMESPACE,
                version=state_wire.STATE_REQUEST_VERSION))
        self._topic = topic
        self._clock = clock
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._asked = {}
        self._everyone_at = None

    def everyone(self):
        """Ask every agent (fanout); each answers after its spread."""
        with self._lock:
            self._everyone_at = self._clock()
            self._asked.clear()
        return self._cast(self._client.prepare(fanout=True), True,
                          'every agent')

    def host(self, host):
        """Ask ``host``'s agent now, unless asked within the interval.

        True when a request went out.
        """
        now = self._clock()
        with self._lock:
            last = self._asked.get(host, self._everyone_at)
            if last is not None and now - last < self._interval_s:
                return False
            self._asked[host] = now
            if len(self._asked) > 1024:
                self._forget_before(now - self._interval_s)
        return self._cast(self._client.prepare(server=host), False,
                          'host %s' % host)

    def _forget_before(self, horizon):
        # Under the lock: a region's hosts at most, and only recent ones.
        for name in [h for h, at in self._asked.items() if at < horizon]:
            del self._asked[name]

    def _cast(self, client, spread, what):
        try:
            client.cast({}, 'send_state', spread=spread)
        except Exception as e:
            LOG.warning('Cannot ask %s for its state on topic %s: %s',
                        what, self._topic, e)
            return False
        LOG.debug('Asked %s for its state (topic %s)', what, self._topic)
        return True
