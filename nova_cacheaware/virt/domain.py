"""One libvirt domain, seen through the port: typed reads and writes.

A :class:`Domain` wraps a ``virDomain`` found by
:class:`~nova_cacheaware.virt.connection.Connection`. Every method
translates "no such domain" (and, for what only a running domain can do,
"domain is not running") into :class:`~.errors.DomainGone` through the one
:func:`gone_if_missing`; other libvirt errors pass through unchanged, so the
connection can tell a dead link (reconnect and retry) from the rest.
"""

import contextlib
import json
import logging

from nova_cacheaware import exception
from nova_cacheaware.virt import binding
from nova_cacheaware.virt import errors

LOG = logging.getLogger(__name__)


@contextlib.contextmanager
def gone_if_missing(uuid, not_running=False):
    """Raise :class:`DomainGone` for libvirt's "no such domain".

    With ``not_running``, also for "domain is not running"
    (``VIR_ERR_OPERATION_INVALID``): a live-only operation on a domain that
    stopped meanwhile.
    """
    libvirt = binding.libvirt()
    codes = (libvirt.VIR_ERR_NO_DOMAIN,)
    if not_running:
        codes += (libvirt.VIR_ERR_OPERATION_INVALID,)
    try:
        yield
    except libvirt.libvirtError as e:
        if e.get_error_code() in codes:
            raise errors.DomainGone(uuid=uuid, reason=str(e)) from None
        raise


def _cpus(cpumap):
    return tuple(i for i, on in enumerate(cpumap) if on)


class Domain:
    """Typed reads and writes of one domain on an open connection."""

    def __init__(self, connection, conn, dom, uuid=None):
        self._connection = connection
        self._conn = conn
        self._dom = dom
        self.uuid = uuid or dom.UUIDString()
        self.test_driver = binding.is_test_driver(conn)

    def _live(self):
        return 0 if self.test_driver else (
            binding.libvirt().VIR_DOMAIN_AFFECT_LIVE)

    # -- reads --------------------------------------------------------------

    def xml(self, inactive=False):
        """The live domain XML, or the persistent one with ``inactive``."""
        libvirt = binding.libvirt()
        flags = libvirt.VIR_DOMAIN_XML_INACTIVE if inactive else 0
        with gone_if_missing(self.uuid):
            return self._dom.XMLDesc(flags)

    def is_active(self):
        """True while the domain runs."""
        with gone_if_missing(self.uuid):
            return bool(self._dom.isActive())

    def pins(self):
        """``{vcpu: (cpus)}``: the live vCPU affinities."""
        with gone_if_missing(self.uuid, not_running=True):
            info = self._dom.vcpuPinInfo(self._live())
        return {vcpu: _cpus(cpumap) for vcpu, cpumap in enumerate(info)}

    def metadata(self, namespace):
        """The live metadata element of ``namespace``, or None."""
        libvirt = binding.libvirt()
        with gone_if_missing(self.uuid, not_running=True):
            try:
                return self._dom.metadata(
                    libvirt.VIR_DOMAIN_METADATA_ELEMENT, namespace,
                    self._live())
            except libvirt.libvirtError as e:
                if e.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN_METADATA:
                    return None
                raise

    def scheduler_params(self):
        """The live scheduler parameters; None where the driver has none."""
        libvirt = binding.libvirt()
        with gone_if_missing(self.uuid):
            try:
                return self._dom.schedulerParametersFlags(self._live())
            except libvirt.libvirtError as e:
                if e.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                    raise
                return None

    def memory_stats(self):
        """The balloon statistics (``memoryStats()``); ``{}`` if none."""
        libvirt = binding.libvirt()
        with gone_if_missing(self.uuid):
            try:
                return self._dom.memoryStats()
            except libvirt.libvirtError as e:
                if e.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                    raise
                LOG.debug('no balloon statistics for %s: %s', self.uuid, e)
                return {}

    def memory_kib(self):
        """The current memory as ``info()`` reports it, in KiB."""
        with gone_if_missing(self.uuid):
            return self._dom.info()[2]

    def balloon_kib(self, stats=None):
        """The balloon's size now, in KiB.

        The statistics' ``actual`` where the driver reports a real one
        (``info()`` lags until QEMU's event); the test driver's statistics
        are canned, so ``info()`` there.
        """
        stats = self.memory_stats() if stats is None else stats
        if not self.test_driver and 'actual' in stats:
            return stats['actual']
        return self.memory_kib()

    # -- writes -------------------------------------------------------------

    def pin_vcpu(self, vcpu, cpus):
        """Pin one vCPU of the running domain to ``cpus``, live only."""
        libvirt = binding.libvirt()
        ncpus = self._conn.getCPUMap()[0]
        if max(cpus) >= ncpus:
            # libvirt would silently drop the bits past the map.
            raise exception.InvalidInput(
                reason='CPU %d does not exist on this host (%d CPUs)'
                       % (max(cpus), ncpus))
        cpumap = tuple(i in set(cpus) for i in range(ncpus))
        with gone_if_missing(self.uuid, not_running=True):
            if not self._dom.isActive():
                raise errors.DomainGone(uuid=self.uuid, reason='not running')
            flags = (0 if self.test_driver
                     else libvirt.VIR_DOMAIN_AFFECT_LIVE)
            self._dom.pinVcpuFlags(vcpu, cpumap, flags)

    def set_metadata(self, namespace, key, xml):
        """Set (``xml``) or remove (None) a live metadata element."""
        libvirt = binding.libvirt()
        with gone_if_missing(self.uuid, not_running=True):
            self._dom.setMetadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, xml,
                                  key if xml else None, namespace,
                                  self._live())

    def set_memory_mib(self, mib):
        """Set the live balloon target to ``mib`` MiB."""
        libvirt = binding.libvirt()
        with gone_if_missing(self.uuid):
            self._dom.setMemoryFlags(int(mib) * 1024,
                                     libvirt.VIR_DOMAIN_AFFECT_LIVE)

    def update_device(self, xml):
        """``updateDeviceFlags(xml, LIVE)`` (e.g. a virtio-mem request)."""
        libvirt = binding.libvirt()
        with gone_if_missing(self.uuid):
            self._dom.updateDeviceFlags(xml, libvirt.VIR_DOMAIN_AFFECT_LIVE)

    # -- QEMU monitor and guest agent ---------------------------------------

    def monitor_command(self, command):
        """One QMP command (a dict); its decoded reply."""
        qemu = binding.libvirt_qemu()
        with gone_if_missing(self.uuid):
            return json.loads(qemu.qemuMonitorCommand(
                self._dom, json.dumps(command, separators=(',', ':')), 0))

    def guest_vcpus(self):
        """``guestVcpus()``: the guest's vCPU report (None: no agent)."""
        return self._guest(lambda: self._dom.guestVcpus())

    def set_guest_vcpus(self, cpulist_text, online):
        """Online (``online=True``) or offline guest vCPUs."""
        self._guest(lambda: self._dom.setGuestVcpus(cpulist_text,
                                                    1 if online else 0))

    def agent_command(self, text, timeout_s):
        """One raw guest-agent command (JSON text); the raw reply."""
        qemu = binding.libvirt_qemu()
        return self._guest(lambda: qemu.qemuAgentCommand(
            self._dom, text, int(timeout_s), 0))

    def _guest(self, fn):
        """Run a guest-agent call; the guest agent's errors typed."""
        libvirt = binding.libvirt()
        uuid = self.uuid
        try:
            return fn()
        except libvirt.libvirtError as e:
            code = e.get_error_code()
            if code in (libvirt.VIR_ERR_AGENT_UNRESPONSIVE,
                        getattr(libvirt, 'VIR_ERR_AGENT_COMMAND_TIMEOUT', -1),
                        libvirt.VIR_ERR_OPERATION_INVALID,
                        libvirt.VIR_ERR_NO_SUPPORT,
                        libvirt.VIR_ERR_ARGUMENT_UNSUPPORTED):
                raise errors.GuestAgentUnavailable(uuid=uuid,
                                                   reason=str(e)) from None
            if code == libvirt.VIR_ERR_NO_DOMAIN:
                raise errors.DomainGone(uuid=uuid, reason=str(e)) from None
            if self._connection.is_connection_error(e):
                raise
            raise errors.GuestAgentError(uuid=uuid, reason=str(e)) from None
