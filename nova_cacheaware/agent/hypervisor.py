"""The agent's view of the hypervisor: a narrow interface over the port.

:class:`Hypervisor` is all the agent's loop needs from the hypervisor. The
one real implementation, :class:`LibvirtHypervisor`, is built on the
hypervisor port (:mod:`nova_cacheaware.virt`, the only code that imports
libvirt) and tested against libvirt's ``test:///default`` driver and a real
libvirtd + QEMU. The capabilities use the port's typed reads and writes
through the same object (:meth:`~.virt.connection.Connection.on_domain`).
"""

import abc
import dataclasses
import logging
import typing as ty

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import libvirt_hook
from nova_cacheaware.agent import threads
from nova_cacheaware import exception
from nova_cacheaware.virt import connection as port
from nova_cacheaware.virt import errors

LOG = logging.getLogger(__name__)

# Lifecycle reasons the agent reacts to (see :meth:`Hypervisor.start`).
STARTED = port.STARTED
RESUMED = port.RESUMED
MIGRATED = port.MIGRATED
REBOOTED = port.REBOOTED
STOPPED = port.STOPPED
CLOSED = port.CLOSED

DomainGone = errors.DomainGone
HypervisorUnavailable = errors.HypervisorUnavailable
lifecycle_reason = port.lifecycle_reason


@dataclasses.dataclass(frozen=True)
class Instance:
    """A running Nova instance: Nova's view plus its live pinning.

    ``ours`` are the vCPUs the agent's metadata says it pinned (read only
    when some live pin differs from Nova's).
    """

    nova: domain_xml.NovaDomain
    live: ty.Dict[int, ty.Tuple[int, ...]]
    ours: ty.FrozenSet[int] = frozenset()

    @property
    def uuid(self):
        """The Nova instance uuid (the libvirt domain uuid)."""
        return self.nova.uuid


class Hypervisor(abc.ABC):
    """What the agent needs from a hypervisor."""

    @abc.abstractmethod
    def host_cpus(self):
        """Sorted ids of the host CPUs the hypervisor can pin to."""

    @abc.abstractmethod
    def list_instances(self):
        """Running Nova instances, as a list of :class:`Instance`."""

    @abc.abstractmethod
    def vcpu_stats(self):
        """``{uuid: {vcpu: {'time': ns, 'delay': ns}}}`` of running domains."""

    @abc.abstractmethod
    def vcpu_threads(self, uuid):
        """``{vcpu: thread id}``; empty when the driver cannot tell."""

    @abc.abstractmethod
    def pin_vcpu(self, uuid, vcpu, cpus):
        """Pin one vCPU of a running domain to ``cpus``, live only."""

    @abc.abstractmethod
    def record_pins(self, uuid, metadata_xml):
        """Store the agent's metadata element on the running domain."""

    @abc.abstractmethod
    def start(self, on_event):
        """Start delivering lifecycle events as ``on_event(uuid, reason)``."""

    @abc.abstractmethod
    def stop(self):
        """Stop delivering events and close connections."""


class LibvirtHypervisor(port.Connection, Hypervisor):
    """:class:`Hypervisor` over the libvirt port's connection.

    The constructor does no I/O (see :class:`~.virt.connection.Connection`
    for reconnects). ``domain_filter(uuid) -> bool`` limits the instances
    the agent sees (a staged rollout, or tests sharing a libvirtd with
    others); None: all.
    """

    def __init__(self, uri, domain_filter=None):
        super().__init__(uri, domain_filter=domain_filter)
        self._parsed = {}  # uuid -> ((inactive XML, host CPUs), NovaDomain)

    # -- observe ------------------------------------------------------------

    def list_instances(self):
        """Running domains that carry Nova metadata."""
        host = self.host_cpus()

        def collect(conn):
            result = []
            seen = set()
            for dom in self.active_domains(conn):
                seen.add(dom.uuid)
                try:
                    instance = self._instance(dom, host)
                except DomainGone as e:
                    # Destroyed or stopped ("domain is not running")
                    # between the listing and the read: skip it, the
                    # others are still planned.
                    LOG.info('domain vanished while listing: %s', e)
                    continue
                except exception.InvalidInput as e:
                    LOG.warning('skipping domain %s: %s', dom.uuid, e)
                    continue
                if instance is not None:
                    result.append(instance)
            for gone in set(self._parsed) - seen:
                del self._parsed[gone]
            return result

        return self.call(collect)

    def _instance(self, dom, host):
        # Nova's definition is the persistent (inactive) XML: our pins are
        # live-only, so it still holds Nova's allowed CPUs, and it carries
        # the same metadata. It is parsed again only when it changes.
        inactive = dom.xml(inactive=True)
        if '/xmlns/libvirt/nova/' not in inactive:
            return None
        cached = self._parsed.get(dom.uuid)
        if cached is not None and cached[0] == (inactive, host):
            nova = cached[1]
        else:
            saved = _without_agent_pins(dom.uuid, inactive)
            nova = domain_xml.parse_nova_domain(saved, saved, host)
            self._parsed[dom.uuid] = ((inactive, host), nova)
        if nova is None:
            return None
        live = {vcpu: cpus for vcpu, cpus in dom.pins().items()
                if vcpu in nova.allowed}
        ours = frozenset()
        if any(cpus != nova.allowed[v] for v, cpus in live.items()):
            ours = self._agent_pins(dom)
        return Instance(nova=nova, live=live, ours=ours)

    def _agent_pins(self, dom):
        xml = dom.metadata(domain_xml.AGENT_NS)
        if xml is None:
            return frozenset()
        try:
            return domain_xml.parse_agent_pins(xml)
        except exception.InvalidInput as e:
            LOG.warning('ignoring unreadable agent metadata on %s: %s',
                        dom.uuid, e)
            return frozenset()

    def vcpu_stats(self):
        """``vcpu.N.time`` / ``vcpu.N.delay`` from getAllDomainStats."""
        out = {}
        for uuid, stats in (self.domain_stats('VCPU') or {}).items():
            per = {}
            for key, value in stats.items():
                parts = key.split('.')
                if (len(parts) == 3 and parts[0] == 'vcpu'
                        and parts[1].isdigit()
                        and parts[2] in ('time', 'delay')):
                    per.setdefault(int(parts[1]), {})[parts[2]] = value
            out[uuid] = per
        return out

    def vcpu_threads(self, uuid):
        """vCPU thread ids through QMP ``query-cpus-fast`` (qemu driver only).

        Note that libvirt marks a domain "tainted: custom-monitor" after a
        monitor command; the agent only asks when hardware counters are on.
        """
        def ask(conn):
            if conn.getType() != 'QEMU':
                return {}
            reply = self.domain(conn, uuid).monitor_command(
                {'execute': 'query-cpus-fast'})
            return {c['cpu-index']: c['thread-id']
                    for c in reply.get('return', [])}

        return self.call(ask)

    # -- act ----------------------------------------------------------------

    def pin_vcpu(self, uuid, vcpu, cpus):
        """Pin one vCPU live (``pinVcpuFlags`` with AFFECT_LIVE).

        Raises :class:`DomainGone` if the domain is not running any more and
        :class:`InvalidInput` for an empty cpuset (never sent to libvirt).
        """
        if not cpus:
            raise exception.InvalidInput(
                reason='refusing to pin vCPU %d of %s to no CPU'
                       % (vcpu, uuid))
        self.on_domain(uuid, lambda dom: dom.pin_vcpu(vcpu, cpus))

    def record_pins(self, uuid, metadata_xml):
        """Set the agent's metadata element on the live domain."""
        self.on_domain(uuid, lambda dom: dom.set_metadata(
            domain_xml.AGENT_NS, domain_xml.AGENT_KEY, metadata_xml))

    # -- events -------------------------------------------------------------

    def start(self, on_event):
        """Subscribe to lifecycle events (see ``Connection.subscribe``)."""
        self.subscribe(on_event, threads.start_os_thread)

    def stop(self):
        """Unsubscribe and close the connection."""
        self.unsubscribe()


def vcpu_thread_ids(hypervisor, instances):
    """``{"<uuid>/<vcpu>": thread id}`` of the instances' vCPU threads.

    Instances that disappeared meanwhile are left out.
    """
    threads = {}
    for instance in instances:
        try:
            for vcpu, tid in hypervisor.vcpu_threads(instance.uuid).items():
                threads['%s/%d' % (instance.uuid, vcpu)] = tid
        except DomainGone:
            continue
    return threads


def _without_agent_pins(uuid, saved_xml):
    """Nova's saved definition, without pins an agent recorded as its own.

    The agent pins live only, so its pins and record are never in a saved
    definition - except after a live migration: Nova 34 sends the source's
    running XML as the destination's saved definition too, and libvirt runs
    the hook on the running one only. Read as Nova's, those pins would make
    the guest look pinned by Nova and the agent would never move it.
    """
    if domain_xml.AGENT_NS not in saved_xml:
        return saved_xml
    try:
        stripped = libvirt_hook.strip_agent_pins(saved_xml)
    except Exception as e:   # unreadable record: parse it as it is
        LOG.warning('saved definition of %s carries agent pins that could '
                    'not be read (%s); left as it is', uuid, e)
        return saved_xml
    if stripped is None:
        return saved_xml
    LOG.warning('saved definition of %s carries agent pins (copied by a '
                'live migration); Nova\'s CPUs read without them', uuid)
    return stripped
