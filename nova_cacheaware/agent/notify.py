"""The agent's ``cacheaware.host.state`` notifications for the scheduler.

:class:`NotificationStatePublisher` implements
:class:`~nova_cacheaware.agent.reporting.StatePublisher`: it turns the
agent's report (:class:`~nova_cacheaware.agent.reporting.HostReport`) into
the contract's :class:`~nova_cacheaware.contracts.host_state.HostCacheState`
(:func:`to_host_cache_state`) and emits it with
:func:`~nova_cacheaware.notifications.publish_host_state` on the scheduler's
``[cacheaware_scheduler] host_state_topic``.

It sends the message that ``oslo_messaging.Notifier`` with the
``messagingv2`` driver sends (what the scheduler's listener reads), but
through the transport directly: the Notifier logs and swallows a delivery
failure, and the agent must know whether the state got through.

A broker outage never blocks or stops the agent: each message gets one
connection attempt (``retry=0``); a failed one is kept, and the next pass
sends its own, newer state (a state supersedes the previous one, so only
the newest is worth sending). Outage and recovery are logged once each
(``the message bus recovered after N s``).
"""

import datetime
import json
import logging
import random
import threading
import time
import uuid as uuid_mod

import oslo_messaging
from oslo_utils import timeutils

from nova_cacheaware.agent import metrics as metrics_mod
from nova_cacheaware.agent import outage
from nova_cacheaware.agent import reporting
from nova_cacheaware.contracts import host_state
from nova_cacheaware.contracts import state_wire
from nova_cacheaware.contracts import timestamps
from nova_cacheaware import exception
from nova_cacheaware import notifications
from nova_cacheaware.pcpu_est import headroom as pcpu_headroom
from nova_cacheaware.policy import state_cadence

#: The messagingv2 envelope version.
ENVELOPE_VERSION = 2.0

#: oslo.messaging's ``control_exchange`` of Nova's processes (Nova sets it
#: at start), so the exchange the scheduler's listener binds to.
NOVA_EXCHANGE = 'nova'

LOG = logging.getLogger(__name__)


def notification_transport(conf, url=None):
    """The notification transport, on Nova's exchange unless configured.

    The scheduler's listener runs inside nova-scheduler, whose
    ``[DEFAULT] control_exchange`` is Nova's (``nova``); oslo.messaging's
    own default (``openstack``) would send every state to an exchange no
    scheduler listens on. As Nova does, this sets the default before the
    transport reads it, so a ``control_exchange`` in the agent's file
    (the value of nova.conf, if changed there) still wins.
    """
    oslo_messaging.set_transport_defaults(control_exchange=NOVA_EXCHANGE)
    return oslo_messaging.get_notification_transport(conf, url=url)


def to_host_cache_state(report, host, now=None, sizing_view=None):
    """The contract's :class:`HostCacheState` of the agent's ``report``.

    ``report`` is the pass's :class:`~.reporting.HostReport`: each domain's
    state comes from its memory-bound VMs, each VM's domain from its pins
    (one domain, or none), its ``pcpu_estimate`` and ``spin_storm`` from
    the ``vcpu_sizing`` section (with the host's vCPU affinities, payload
    1.1 ``vcpu_affinity``, and ``available_pcpus``, the pCPUs they may
    use); the per-domain fields as :func:`_domain_states` says.

    :param sizing_view: a :class:`SizingView` that remembers the last
        affinities' derived values (the publisher's); None derives them
        anew, ``pcpu_levels`` included.
    """
    sizing = report.sizing() or reporting.SizingSection()
    vms = []
    for uuid, vm in sorted(report.vms.items()):
        sized = sizing.vms.get(uuid, reporting.NOT_SIZED)
        vms.append(host_state.VmState(
            instance_uuid=uuid,
            workload_class=(vm.workload if vm.workload in
                            host_state.VM_CLASSES else 'unknown'),
            domain_id=vm.domains[0] if len(vm.domains) == 1 else None,
            pcpu_estimate=sized.pcpu_estimate, spin_storm=sized.spin_storm))
    affinity = sizing.affinity
    pcpus = (float(len(affinity.pcpus))
             if affinity is not None and affinity.pcpus else None)
    levels = (sizing_view or SizingView()).levels_of(affinity)
    return host_state.HostCacheState(
        host=host, timestamp=now or datetime.datetime.now(
            datetime.timezone.utc),
        agent_healthy=report.healthy, domains=_domain_states(report),
        vms=tuple(vms), available_pcpus=pcpus,
        host_provider=report.host_provider, vcpu_affinity=affinity,
        pcpu_levels=levels)


def pcpu_levels(affinity):
    """Payload 2.0 ``pcpu_levels`` of the VMs' affinities, or None."""
    if affinity is None:
        return None
    try:
        levels = pcpu_headroom.share_levels(affinity)
    except exception.InvalidInput as e:
        LOG.warning('no pCPU levels for the live state: %s', e)
        return None
    return None if levels is None else state_wire.PcpuLevels(*levels)


class SizingView:
    """The pCPU levels of a report's vCPU affinities, derived once.

    Computing the levels (pCPU-Est of every VM) was more than half of an
    agent pass's reporting cost at 200 VMs, and the affinities rarely
    change between passes: the publisher keeps one view and derives anew
    only when they differ from the last ones (the ``vcpu_sizing``
    capability hands the same object while they do not change).
    ``levels=False``: no levels (payload 1.x carries none).
    """

    def __init__(self, levels=True):
        self.levels = levels
        self._last = None
        self._derived = None

    def levels_of(self, affinity):
        """The :class:`~.state_wire.PcpuLevels` of ``affinity``, or None."""
        if affinity is None or not self.levels:
            return None
        if affinity is not self._last and affinity != self._last:
            self._derived = pcpu_levels(affinity)
            self._last = affinity
        return self._derived


def _domain_states(report):
    """The :class:`host_state.DomainState` of each domain of ``report``.

    ``vcpus_used``: in the per-host model what the agent's domain choice
    counted (``domain_load``, with ``clean_holders``: the inputs of its
    next choice, which the scheduler predicts), else the vCPUs of the VMs
    pinned in the domain (None when a VM's are not counted);
    ``required_holders``: ``domain_required`` (None: unknown).
    """
    used = _vcpus_by_domain(report.vms)
    load, required = report.domain_load, report.domain_required
    domains = []
    for domain_id, vms in sorted(report.memory_vms.items()):
        vcpus, clean = (load.get(domain_id, (0, 0)) if load is not None
                        else (None if used is None
                              else used.get(domain_id, 0), None))
        domains.append(host_state.DomainState(
            id=domain_id, state=host_state.domain_state(len(vms)),
            memory_bound_vms=tuple(vms),
            usable_cpus=int(report.usable_cpus.get(domain_id, 0)),
            provider_uuid=report.providers.get(domain_id), vcpus_used=vcpus,
            vcpus_capacity=report.domain_capacity.get(domain_id),
            clean_holders=clean,
            required_holders=(None if required is None
                              else required.get(domain_id, 0))))
    return tuple(domains)


def _vcpus_by_domain(vms):
    """``{domain: vCPUs}`` of the VMs pinned in one; None: not counted."""
    if any(vm.vcpus is None for vm in vms.values()):
        return None
    used = {}
    for vm in vms.values():
        if len(vm.domains) == 1:
            used[vm.domains[0]] = used.get(vm.domains[0], 0) + vm.vcpus
    return used


class NotificationStatePublisher(reporting.StatePublisher):
    """Emits ``cacheaware.host.state`` (and heartbeats) over oslo.messaging.

    :param transport: an oslo.messaging notification transport.
    :param host: the Nova compute service host name (the scheduler's
        ``HostState.host``).
    :param topic: ``[cacheaware_scheduler] host_state_topic``.
    :param version: ``[agent] state_payload_version``: 2.0 sends the
        compact state when it changes and at ``cadence.resync_s``, and
        heartbeats between (:mod:`~nova_cacheaware.policy.state_cadence`);
        1.5 (schedulers not upgraded yet) the whole state at every pass.
    :param cadence: a :class:`~.state_cadence.Cadence` (2.0 only).
    :param clock: monotonic seconds (tests).
    :param draw: uniform random numbers in ``[0, 1)`` for the resync
        jitter (tests).
    :param metrics: the agent's :class:`~.metrics.AgentMetrics` (messages
        and bytes sent, send failures); None: counted on a private one.
    """

    def __init__(self, transport, host, topic, version=state_wire.VERSION,
                 cadence=None, clock=time.monotonic, metrics=None,
                 draw=None):
        if version not in state_wire.WRITABLE:
            raise ValueError('state payload version %r is not one of %s'
                             % (version, ', '.join(state_wire.WRITABLE)))
        self.transport = transport
        self.host = host
        self.topic = topic
        self.version = version
        self.cadence = cadence or state_cadence.Cadence(
            heartbeat_s=60.0, resync_s=300.0)
        self._clock = clock
        self._draw = draw or random.Random().random
        self.publisher_id = 'nova-cacheaware-agent.%s' % host
        self.sent = 0
        self.failed = 0
        self.heartbeats = 0
        # Milliseconds since the epoch: the generations of a restarted
        # agent start above those it sent before (clocks move forward).
        self.last = state_cadence.Sent(
            generation=int(time.time() * 1000))
        #: The newest state not delivered (None once one got through).
        self.pending = None
        self.outages = outage.Outages(log=LOG)
        self.metrics = metrics or metrics_mod.AgentMetrics()
        self._sizing = SizingView(levels=version == state_wire.VERSION)
        # When a state a scheduler asked for is due (the RPC thread sets
        # it, the agent's pass reads it).
        self._request_lock = threading.Lock()
        self._requested_at = None

    def request_state(self, delay_s):
        """A scheduler asked for the full state: send it ``delay_s`` from now.

        At the first pass from then on (any thread; requests coalesce).
        """
        with self._request_lock:
            self._requested_at = state_cadence.requested(
                self._requested_at, self._clock() + max(0.0, delay_s))

    def publish(self, state):
        """Send what the agent's report ``state`` calls for.

        ``state``: the pass's :class:`~.reporting.HostReport`. True when
        it was delivered or nothing was due.
        """
        built = to_host_cache_state(state, self.host,
                                    sizing_view=self._sizing)
        if self.version != state_wire.VERSION:
            return self._deliver(
                host_state.EVENT_TYPE,
                state_wire.render_state(built, self.version), built)
        content = state_wire.to_compact(built)
        content.pop('timestamp')
        now = self._clock()
        kind, generation = state_cadence.next_message(
            self.last, content, now, self.cadence, self._requested_at)
        if kind is None:
            return True
        if kind == state_cadence.STATE:
            payload = dict(content, generation=generation,
                           timestamp=timestamps.format_time(built.timestamp))
            ok = self._deliver(host_state.EVENT_TYPE, payload, built)
            if ok:
                with self._request_lock:
                    self._requested_at = state_cadence.answered(
                        self._requested_at, now)
        else:
            ok = self._deliver(state_wire.HEARTBEAT_EVENT,
                               state_wire.heartbeat_payload(
                                   state_wire.Heartbeat(
                                       host=self.host, generation=generation,
                                       agent_healthy=built.agent_healthy)),
                               None)
            self.heartbeats += ok
        self.last = state_cadence.attempted(
            self.last, kind, generation, content, now, ok,
            resync_in=state_cadence.resync_after(self.cadence, self._draw()))
        return ok

    def _deliver(self, event_type, payload, built):
        kind = 'heartbeat' if built is None else 'state'
        try:
            size = self._send(event_type, payload)
        except Exception as e:
            self.metrics.send_failed(kind)
            self.outages.failed(
                'the message bus', 'cannot send %s on topic %s: %s' % (
                    event_type, self.topic, e),
                'the agent keeps working and sends its newest state at '
                'each pass until the bus is back')
            self.failed += 1
            if built is not None:
                self.pending = built
            return False
        self.outages.ok('the message bus')
        self.metrics.message_sent(kind, size)
        if built is not None:
            self.pending = None
            self.sent += 1
        return True

    def _send(self, event_type, payload):
        # What Notifier.info() + the messagingv2 driver send, raising on
        # failure instead of logging it. Returns the message's size as
        # JSON (what the driver serializes it to, envelope aside).
        message = {'message_id': str(uuid_mod.uuid4()),
                   'publisher_id': self.publisher_id,
                   'event_type': event_type,
                   'priority': notifications.PRIORITY.upper(),
                   'payload': payload,
                   'timestamp': str(timeutils.utcnow())}
        target = oslo_messaging.Target(
            topic='%s.%s' % (self.topic, notifications.PRIORITY))
        self.transport._send_notification(target, {}, message,
                                          version=ENVELOPE_VERSION, retry=0)
        return len(json.dumps(message, default=str).encode())

    def close(self):
        """Release the transport's connections."""
        self.transport.cleanup()
