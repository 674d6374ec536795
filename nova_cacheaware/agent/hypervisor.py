"""The agent's view of the hypervisor: a narrow interface, libvirt adapter.

:class:`Hypervisor` is all the agent needs from the hypervisor. The one real
implementation, :class:`LibvirtHypervisor`, is tested against libvirt's
``test:///default`` driver and a real libvirtd + QEMU; nothing in the agent
talks to libvirt directly.
"""

import abc
import dataclasses
import json
import logging
import threading
import typing as ty

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import threads
from nova_cacheaware import exception

LOG = logging.getLogger(__name__)

# Lifecycle reasons the agent reacts to (see :meth:`Hypervisor.start`).
STARTED = 'started'
RESUMED = 'resumed'
MIGRATED = 'migrated'
REBOOTED = 'rebooted'
STOPPED = 'stopped'
# The connection closed (libvirtd restarted): reconnect and re-read all.
CLOSED = 'closed'


class DomainGone(exception.CacheAwareError):
    """The domain disappeared (destroyed, undefined) while we used it."""

    msg_fmt = 'domain %(uuid)s is gone: %(reason)s'


class HypervisorUnavailable(exception.CacheAwareError):
    """The hypervisor cannot be reached now; the agent retries later."""

    msg_fmt = '%(uri)s is unavailable: %(reason)s'


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


def libvirt_module():
    """libvirt-python, imported on first use.

    Lazily, so that pure modules and unit tests never need it.
    """
    import libvirt
    return libvirt


_libvirt = libvirt_module


_EVENT_LOOP_LOCK = threading.Lock()
_EVENT_LOOP_STARTED = False


def _ensure_event_loop():
    """Register libvirt's default event loop and run it on an OS thread.

    libvirt allows one event implementation per process and it must be
    registered before the connections that deliver events are opened.
    The loop blocks in C: in an eventlet-patched process a green thread
    running it would stall the hub, so it always gets a real OS thread
    (:func:`~nova_cacheaware.agent.threads.start_os_thread`), and the
    callbacks it runs only hand events over (see ``Agent.on_event``).
    """
    global _EVENT_LOOP_STARTED
    libvirt = _libvirt()
    with _EVENT_LOOP_LOCK:
        if _EVENT_LOOP_STARTED:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run():
            while True:
                libvirt.virEventRunDefaultImpl()

        threads.start_os_thread(run, 'libvirt-events')
        _EVENT_LOOP_STARTED = True


def _silence_libvirt_stderr():
    # libvirt prints every error on stderr by default; we log what matters.
    _libvirt().registerErrorHandler(lambda ctx, err: None, None)


class LibvirtHypervisor(Hypervisor):
    """:class:`Hypervisor` over libvirt-python.

    The constructor does no I/O: the connection opens on first use and is
    reopened after libvirtd restarts (a dead connection is dropped, the call
    retried once on a fresh one, and :class:`HypervisorUnavailable` raised if
    that fails too).

    ``domain_filter(uuid) -> bool`` limits the instances the agent sees (a
    staged rollout, or tests sharing a libvirtd with others); None: all.
    """

    def __init__(self, uri, domain_filter=None):
        self.uri = uri
        self.domain_filter = domain_filter
        self._conn = None
        self._lock = threading.RLock()
        self._on_event = None
        self._callback_ids = []
        self._parsed = {}  # uuid -> ((inactive XML, host CPUs), NovaDomain)

    # -- connection ---------------------------------------------------------

    def connection(self):
        """The open libvirt connection (opened now if needed)."""
        libvirt = _libvirt()
        with self._lock:
            if self._conn is not None:
                try:
                    if self._conn.isAlive():
                        return self._conn
                except libvirt.libvirtError:
                    pass
                LOG.warning('libvirt connection to %s was lost; reconnecting',
                            self.uri)
                self._drop()
            _silence_libvirt_stderr()
            try:
                conn = libvirt.open(self.uri)
            except libvirt.libvirtError as e:
                raise HypervisorUnavailable(uri=self.uri,
                                            reason=str(e)) from None
            self._conn = conn
            if self._on_event is not None:
                self._register_events(conn)
            return conn

    def _drop(self):
        conn, self._conn = self._conn, None
        self._callback_ids = []
        if conn is not None:
            try:
                conn.close()
            except Exception:  # a dead connection may refuse to close
                pass

    def _is_connection_error(self, error):
        libvirt = _libvirt()
        if error.get_error_code() in (libvirt.VIR_ERR_SYSTEM_ERROR,
                                      libvirt.VIR_ERR_INTERNAL_ERROR,
                                      libvirt.VIR_ERR_NO_CONNECT,
                                      libvirt.VIR_ERR_INVALID_CONN,
                                      libvirt.VIR_ERR_RPC):
            conn = self._conn
            try:
                return conn is None or not conn.isAlive()
            except libvirt.libvirtError:
                return True
        return False

    def _call(self, fn):
        """Run ``fn(conn)``; reconnect and retry once if the link died."""
        libvirt = _libvirt()
        for attempt in (1, 2):
            conn = self.connection()
            try:
                return fn(conn)
            except libvirt.libvirtError as e:
                if not self._is_connection_error(e):
                    raise
                with self._lock:
                    if self._conn is conn:
                        self._drop()
                if attempt == 2:
                    raise HypervisorUnavailable(uri=self.uri,
                                                reason=str(e)) from None
                LOG.warning('libvirt call failed on a dead connection (%s); '
                            'retrying on a new one', e)

    def call(self, fn):
        """Run ``fn(conn)`` on the live connection (public :meth:`_call`)."""
        return self._call(fn)

    def lookup(self, conn, uuid):
        """The domain of ``uuid`` on ``conn``; :class:`DomainGone` if none."""
        return self._lookup(conn, uuid)

    def is_connection_error(self, error):
        """True when a libvirt error means the connection died."""
        return self._is_connection_error(error)

    def _lookup(self, conn, uuid):
        libvirt = _libvirt()
        try:
            return conn.lookupByUUIDString(uuid)
        except libvirt.libvirtError as e:
            if e.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                raise DomainGone(uuid=uuid, reason=str(e)) from None
            raise

    # -- observe ------------------------------------------------------------

    def host_cpus(self):
        """Online host CPU ids from ``getCPUMap()`` (what pinning accepts)."""
        def ask(conn):
            ncpus, online, _ = conn.getCPUMap()
            if _is_test_driver(conn):
                # The test driver's online map is canned (0,2,4 of 8) while
                # it pins to all 8: use the whole map there.
                return tuple(range(ncpus))
            return tuple(i for i, on in enumerate(online) if on)
        return self._call(ask)

    def list_instances(self):
        """Running domains that carry Nova metadata."""
        libvirt = _libvirt()
        host = self.host_cpus()

        def collect(conn):
            result = []
            seen = set()
            pin_flags = (0 if _is_test_driver(conn)
                         else libvirt.VIR_DOMAIN_AFFECT_LIVE)
            flags = libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE
            for dom in conn.listAllDomains(flags):
                uuid = dom.UUIDString()
                if (self.domain_filter is not None
                        and not self.domain_filter(uuid)):
                    continue
                seen.add(uuid)
                try:
                    instance = self._instance(dom, uuid, host, pin_flags)
                except libvirt.libvirtError as e:
                    # Destroyed (NO_DOMAIN) or stopped ("domain is not
                    # running": OPERATION_INVALID) between the listing and
                    # the read: skip it, the others are still planned.
                    if e.get_error_code() not in (
                            libvirt.VIR_ERR_NO_DOMAIN,
                            libvirt.VIR_ERR_OPERATION_INVALID):
                        raise
                    LOG.info('domain vanished while listing: %s', e)
                    continue
                except exception.InvalidInput as e:
                    LOG.warning('skipping domain %s: %s', uuid, e)
                    continue
                if instance is not None:
                    result.append(instance)
            for gone in set(self._parsed) - seen:
                del self._parsed[gone]
            return result

        return self._call(collect)

    def _instance(self, dom, uuid, host, pin_flags):
        libvirt = _libvirt()
        # Nova's definition is the persistent (inactive) XML: our pins are
        # live-only, so it still holds Nova's allowed CPUs, and it carries
        # the same metadata. It is parsed again only when it changes.
        inactive = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
        if '/xmlns/libvirt/nova/' not in inactive:
            return None
        cached = self._parsed.get(uuid)
        if cached is not None and cached[0] == (inactive, host):
            nova = cached[1]
        else:
            nova = domain_xml.parse_nova_domain(inactive, inactive, host)
            self._parsed[uuid] = ((inactive, host), nova)
        if nova is None:
            return None
        pininfo = dom.vcpuPinInfo(pin_flags)
        live = {vcpu: tuple(i for i, on in enumerate(cpumap) if on)
                for vcpu, cpumap in enumerate(pininfo)
                if vcpu in nova.allowed}
        ours = frozenset()
        if any(cpus != nova.allowed[v] for v, cpus in live.items()):
            ours = self._agent_pins(dom, pin_flags)
        return Instance(nova=nova, live=live, ours=ours)

    def _agent_pins(self, dom, flags):
        libvirt = _libvirt()
        try:
            xml = dom.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT,
                               domain_xml.AGENT_NS, flags)
        except libvirt.libvirtError as e:
            if e.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN_METADATA:
                return frozenset()
            raise
        try:
            return domain_xml.parse_agent_pins(xml)
        except exception.InvalidInput as e:
            LOG.warning('ignoring unreadable agent metadata on %s: %s',
                        dom.UUIDString(), e)
            return frozenset()

    def vcpu_stats(self):
        """``vcpu.N.time`` / ``vcpu.N.delay`` from getAllDomainStats."""
        libvirt = _libvirt()

        def collect(conn):
            out = {}
            for dom, stats in conn.getAllDomainStats(
                    libvirt.VIR_DOMAIN_STATS_VCPU,
                    libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE):
                per = {}
                for key, value in stats.items():
                    parts = key.split('.')
                    if (len(parts) == 3 and parts[0] == 'vcpu'
                            and parts[1].isdigit()
                            and parts[2] in ('time', 'delay')):
                        per.setdefault(int(parts[1]), {})[parts[2]] = value
                if (self.domain_filter is None
                        or self.domain_filter(dom.UUIDString())):
                    out[dom.UUIDString()] = per
            return out

        return self._call(collect)

    def vcpu_threads(self, uuid):
        """vCPU thread ids through QMP ``query-cpus-fast`` (qemu driver only).

        Note that libvirt marks a domain "tainted: custom-monitor" after a
        monitor command; the agent only asks when hardware counters are on.
        """
        def ask(conn):
            if conn.getType() != 'QEMU':
                return {}
            import libvirt_qemu
            dom = self._lookup(conn, uuid)
            reply = json.loads(libvirt_qemu.qemuMonitorCommand(
                dom, '{"execute":"query-cpus-fast"}', 0))
            return {c['cpu-index']: c['thread-id']
                    for c in reply.get('return', [])}

        return self._call(ask)

    # -- act ----------------------------------------------------------------

    def _live_flag_supported(self, dom):
        # libvirt's test:/// driver rejects VIR_DOMAIN_AFFECT_LIVE for pinning
        # ("unsupported flags (0x1)") but takes 0 (AFFECT_CURRENT), which on a
        # running domain means live. The only flag quirk of the test driver.
        return not _is_test_driver(dom.connect())

    def pin_vcpu(self, uuid, vcpu, cpus):
        """``pinVcpuFlags(vcpu, cpumap, VIR_DOMAIN_AFFECT_LIVE)``.

        Raises :class:`DomainGone` if the domain is not running any more and
        :class:`InvalidInput` for an empty cpuset (never sent to libvirt).
        """
        libvirt = _libvirt()
        if not cpus:
            raise exception.InvalidInput(
                reason='refusing to pin vCPU %d of %s to no CPU'
                       % (vcpu, uuid))

        def pin(conn):
            dom = self._lookup(conn, uuid)
            ncpus = conn.getCPUMap()[0]
            if max(cpus) >= ncpus:
                # libvirt would silently drop the bits past the map.
                raise exception.InvalidInput(
                    reason='CPU %d does not exist on this host (%d CPUs)'
                           % (max(cpus), ncpus))
            cpumap = tuple(i in set(cpus) for i in range(ncpus))
            try:
                if not dom.isActive():
                    raise DomainGone(uuid=uuid, reason='not running')
                flags = (libvirt.VIR_DOMAIN_AFFECT_LIVE
                         if self._live_flag_supported(dom) else 0)
                dom.pinVcpuFlags(vcpu, cpumap, flags)
            except libvirt.libvirtError as e:
                if e.get_error_code() in (libvirt.VIR_ERR_NO_DOMAIN,
                                          libvirt.VIR_ERR_OPERATION_INVALID):
                    raise DomainGone(uuid=uuid, reason=str(e)) from None
                raise

        self._call(pin)

    def record_pins(self, uuid, metadata_xml):
        """Set the agent's metadata element on the live domain."""
        libvirt = _libvirt()

        def record(conn):
            dom = self._lookup(conn, uuid)
            flags = (libvirt.VIR_DOMAIN_AFFECT_LIVE
                     if self._live_flag_supported(dom) else 0)
            try:
                dom.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT,
                                metadata_xml, domain_xml.AGENT_KEY,
                                domain_xml.AGENT_NS, flags)
            except libvirt.libvirtError as e:
                if e.get_error_code() in (libvirt.VIR_ERR_NO_DOMAIN,
                                          libvirt.VIR_ERR_OPERATION_INVALID):
                    raise DomainGone(uuid=uuid, reason=str(e)) from None
                raise

        self._call(record)

    # -- events -------------------------------------------------------------

    def start(self, on_event):
        """Run libvirt's event loop thread and subscribe to lifecycle events.

        ``on_event(uuid, reason)`` is called from libvirt's event thread
        (an OS thread, also in an eventlet-patched process) with one of
        STARTED, RESUMED, MIGRATED, REBOOTED, STOPPED, or ``(None, CLOSED)``
        when the connection closed. It must only hand the event over to
        another thread (no locks, no logging). Subscriptions are renewed on
        every reconnect.
        """
        _ensure_event_loop()
        with self._lock:
            self._on_event = on_event
            # Connections opened before the loop existed deliver no events.
            self._drop()
        try:
            self.connection()
        except HypervisorUnavailable as e:
            # libvirtd not up yet: the first call that reaches it connects
            # and subscribes.
            LOG.warning('%s; will retry', e)

    def stop(self):
        """Unsubscribe and close the connection."""
        with self._lock:
            conn = self._conn
            if conn is not None:
                for cb in self._callback_ids:
                    try:
                        conn.domainEventDeregisterAny(cb)
                    except Exception:  # the connection may be dead already
                        pass
            self._on_event = None
            self._drop()

    def _register_events(self, conn):
        libvirt = _libvirt()
        self._callback_ids = [
            conn.domainEventRegisterAny(
                None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                self._lifecycle, None),
            conn.domainEventRegisterAny(
                None, libvirt.VIR_DOMAIN_EVENT_ID_REBOOT,
                self._reboot, None),
        ]
        try:
            conn.registerCloseCallback(self._closed, None)
        except libvirt.libvirtError:  # not every driver has one (test:///)
            pass

    def _lifecycle(self, conn, dom, event, detail, opaque):
        reason = lifecycle_reason(event, detail)
        if reason and self._on_event is not None:
            self._on_event(dom.UUIDString(), reason)

    def _reboot(self, conn, dom, opaque):
        if self._on_event is not None:
            self._on_event(dom.UUIDString(), REBOOTED)

    def _closed(self, conn, reason, opaque):
        # Runs on libvirt's event thread: no logging here (the agent logs).
        if self._on_event is not None:
            # A reconnect re-reads everything: ask for a reconcile.
            self._on_event(None, CLOSED)


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


def _is_test_driver(conn):
    """True for libvirt's test:/// driver, whose quirks we work around."""
    return conn.getType() == 'TEST'


def lifecycle_reason(event, detail):
    """Map a libvirt lifecycle (event, detail) to the agent's reasons."""
    libvirt = _libvirt()
    if event == libvirt.VIR_DOMAIN_EVENT_STARTED:
        return (MIGRATED if detail == libvirt.VIR_DOMAIN_EVENT_STARTED_MIGRATED
                else STARTED)
    if event == libvirt.VIR_DOMAIN_EVENT_RESUMED:
        return (MIGRATED if detail == libvirt.VIR_DOMAIN_EVENT_RESUMED_MIGRATED
                else RESUMED)
    if event in (libvirt.VIR_DOMAIN_EVENT_STOPPED,
                 libvirt.VIR_DOMAIN_EVENT_UNDEFINED):
        return STOPPED
    return None
