"""The libvirt connection of the hypervisor port.

:class:`Connection` opens on first use (the constructor does no I/O),
reopens after libvirtd restarts (a dead connection is dropped, the call
retried once on a fresh one, and :class:`~.errors.HypervisorUnavailable`
raised if that fails too), limits what it reports to the domains
``domain_filter(uuid) -> bool`` accepts, and delivers lifecycle events.
"""

import logging
import threading

from nova_cacheaware.virt import binding
from nova_cacheaware.virt import domain as domain_mod
from nova_cacheaware.virt import errors

LOG = logging.getLogger(__name__)

# Lifecycle reasons (see :meth:`Connection.subscribe`).
STARTED = 'started'
RESUMED = 'resumed'
MIGRATED = 'migrated'
REBOOTED = 'rebooted'
STOPPED = 'stopped'
# The connection closed (libvirtd restarted): reconnect and re-read all.
CLOSED = 'closed'

_EVENT_LOOP_LOCK = threading.Lock()
_EVENT_LOOP_STARTED = False


def ensure_event_loop(start_thread):
    """Register libvirt's default event loop and run it on an OS thread.

    libvirt allows one event implementation per process and it must be
    registered before the connections that deliver events are opened.
    The loop blocks in C: in an eventlet-patched process a green thread
    running it would stall the hub, so ``start_thread(fn, name)`` must
    start a real OS thread (the agent passes
    :func:`~nova_cacheaware.agent.threads.start_os_thread`), and the
    callbacks it runs only hand events over (see ``Agent.on_event``).
    """
    global _EVENT_LOOP_STARTED
    libvirt = binding.libvirt()
    with _EVENT_LOOP_LOCK:
        if _EVENT_LOOP_STARTED:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run():
            while True:
                libvirt.virEventRunDefaultImpl()

        start_thread(run, 'libvirt-events')
        _EVENT_LOOP_STARTED = True


def lifecycle_reason(event, detail):
    """Map a libvirt lifecycle (event, detail) to the agent's reasons."""
    libvirt = binding.libvirt()
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


class Connection:
    """One libvirt URI: reconnecting, filtered, typed."""

    def __init__(self, uri, domain_filter=None):
        self.uri = uri
        self.domain_filter = domain_filter
        self._conn = None
        self._lock = threading.RLock()
        self._on_event = None
        self._callback_ids = []
        # Calls in flight per connection object, and the dropped connections
        # whose close waits for them: closing a connection another thread
        # is using crashes libvirt-python (seen in vcpuPinInfo while the
        # agent's subscription replaced the connection).
        self._users = {}
        self._closing = {}   # id -> connection

    # -- connection ---------------------------------------------------------

    def connection(self):
        """The open libvirt connection (opened now if needed)."""
        libvirt = binding.libvirt()
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
            binding.silence_stderr()
            try:
                conn = libvirt.open(self.uri)
            except libvirt.libvirtError as e:
                raise errors.HypervisorUnavailable(uri=self.uri,
                                                   reason=str(e)) from None
            self._conn = conn
            if self._on_event is not None:
                self._register_events(conn)
            return conn

    def _drop(self):
        conn, self._conn = self._conn, None
        self._callback_ids = []
        if conn is None:
            return
        if self._users.get(id(conn)):
            self._closing[id(conn)] = conn
        else:
            _close(conn)

    def _acquire(self):
        with self._lock:
            conn = self.connection()
            self._users[id(conn)] = self._users.get(id(conn), 0) + 1
            return conn

    def _release(self, conn):
        with self._lock:
            left = self._users.pop(id(conn)) - 1
            if left:
                self._users[id(conn)] = left
            elif self._closing.pop(id(conn), None) is not None:
                _close(conn)

    def is_connection_error(self, error):
        """True when a libvirt error means the connection died."""
        libvirt = binding.libvirt()
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

    def call(self, fn):
        """Run ``fn(conn)``; retry once on a new connection if it died.

        Also when another thread replaced the connection while ``fn`` ran
        (the event subscription at start, a reconnect): the old one is
        closed only when the last call using it returns.
        """
        libvirt = binding.libvirt()
        for attempt in (1, 2):
            conn = self._acquire()
            try:
                return fn(conn)
            except libvirt.libvirtError as e:
                replaced = self._conn is not conn
                if not replaced and not self.is_connection_error(e):
                    raise
                with self._lock:
                    if self._conn is conn:
                        self._drop()
                if attempt == 2:
                    raise errors.HypervisorUnavailable(
                        uri=self.uri, reason=str(e)) from None
                LOG.warning('libvirt call failed on a dead connection (%s); '
                            'retrying on a new one', e)
            finally:
                self._release(conn)

    def lookup(self, conn, uuid):
        """The ``virDomain`` of ``uuid`` on ``conn``; DomainGone if none."""
        with domain_mod.gone_if_missing(uuid):
            return conn.lookupByUUIDString(uuid)

    # -- domains ------------------------------------------------------------

    def domain(self, conn, uuid):
        """The :class:`~.domain.Domain` of ``uuid`` on ``conn``."""
        return domain_mod.Domain(self, conn, self.lookup(conn, uuid), uuid)

    def on_domain(self, uuid, fn):
        """``fn(Domain)`` on the live connection (see :meth:`call`)."""
        return self.call(lambda conn: fn(self.domain(conn, uuid)))

    def _wanted(self, uuid):
        return self.domain_filter is None or self.domain_filter(uuid)

    def active_domains(self, conn):
        """:class:`~.domain.Domain` of every running domain we may see."""
        libvirt = binding.libvirt()
        out = []
        for dom in conn.listAllDomains(
                libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
            uuid = dom.UUIDString()
            if self._wanted(uuid):
                out.append(domain_mod.Domain(self, conn, dom, uuid))
        return out

    def domain_stats(self, group):
        """``{uuid: {stat: value}}`` of running domains for one group.

        ``group`` names a ``VIR_DOMAIN_STATS_*`` group (``'VCPU'``,
        ``'VM'``); None when this libvirt or driver does not have it.
        """
        libvirt = binding.libvirt()
        flag = getattr(libvirt, 'VIR_DOMAIN_STATS_' + group, None)
        if flag is None:
            return None

        def collect(conn):
            return {dom.UUIDString(): stats
                    for dom, stats in conn.getAllDomainStats(
                        flag,
                        libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE)
                    if self._wanted(dom.UUIDString())}

        try:
            return self.call(collect)
        except libvirt.libvirtError as e:
            if e.get_error_code() in (libvirt.VIR_ERR_NO_SUPPORT,
                                      libvirt.VIR_ERR_ARGUMENT_UNSUPPORTED,
                                      libvirt.VIR_ERR_INVALID_ARG):
                return None
            raise

    # -- host ---------------------------------------------------------------

    def host_cpus(self):
        """Online host CPU ids from ``getCPUMap()`` (what pinning accepts)."""
        def ask(conn):
            ncpus, online, _ = conn.getCPUMap()
            if binding.is_test_driver(conn):
                # The test driver's online map is canned (0,2,4 of 8) while
                # it pins to all 8: use the whole map there.
                return tuple(range(ncpus))
            return tuple(i for i, on in enumerate(online) if on)
        return self.call(ask)

    def hostname(self):
        """The hypervisor host's name (``getHostname()``)."""
        return self.call(lambda conn: conn.getHostname())

    def driver_type(self):
        """``getType()``: ``'QEMU'``, ``'TEST'``, ..."""
        return self.call(lambda conn: conn.getType())

    # -- events -------------------------------------------------------------

    def subscribe(self, on_event, start_thread):
        """Run libvirt's event loop thread and subscribe to lifecycle events.

        ``on_event(uuid, reason)`` is called from libvirt's event thread
        (an OS thread, also in an eventlet-patched process) with one of
        STARTED, RESUMED, MIGRATED, REBOOTED, STOPPED, or ``(None, CLOSED)``
        when the connection closed. It must only hand the event over to
        another thread (no locks, no logging). Subscriptions are renewed on
        every reconnect. ``start_thread`` as for :func:`ensure_event_loop`.
        """
        ensure_event_loop(start_thread)
        with self._lock:
            self._on_event = on_event
            # Connections opened before the loop existed deliver no events.
            self._drop()
        try:
            self.connection()
        except errors.HypervisorUnavailable as e:
            # libvirtd not up yet: the first call that reaches it connects
            # and subscribes.
            LOG.warning('%s; will retry', e)

    def unsubscribe(self):
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
        libvirt = binding.libvirt()
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


def _close(conn):
    try:
        conn.close()
    except Exception:  # a dead connection may refuse to close
        pass
