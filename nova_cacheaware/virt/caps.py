"""The host capabilities XML, read on a read-only connection."""

from nova_cacheaware import exception
from nova_cacheaware.virt import binding


def capabilities_xml(uri):
    """``getCapabilities()`` of ``uri``; TopologyError if it cannot."""
    libvirt = binding.libvirt()
    binding.silence_stderr()
    try:
        conn = libvirt.openReadOnly(uri)
        try:
            return conn.getCapabilities()
        finally:
            conn.close()
    except libvirt.libvirtError as e:
        raise exception.TopologyError(source=uri,
                                      reason=e.get_error_message()) from None
