"""Read-only libvirt access for the devcloud's optional checks.

With ``[cacheaware] libvirt_uris`` a scenario may open a compute host's
libvirt read-only to check what no public API shows (the agent's live
pins, its pin record in the domain XML); without it those checks are left
out and the public APIs alone decide.
"""

#: The agent's metadata namespace (nova_cacheaware.agent.domain_xml).
AGENT_NS = 'http://openstack.org/xmlns/nova-cacheaware/agent/1.0'


class LibvirtView(object):
    """Read-only look at one server's domain on one host (devcloud only)."""

    def __init__(self, uri):
        import libvirt  # only with [cacheaware] libvirt_uris
        self.libvirt = libvirt
        self.conn = libvirt.openReadOnly(uri)

    def close(self):
        """Close the connection."""
        self.conn.close()

    def pins(self, uuid):
        """``{vcpu: (host CPUs,)}`` of the running domain's live pins."""
        dom = self.conn.lookupByUUIDString(uuid)
        info = dom.vcpuPinInfo(self.libvirt.VIR_DOMAIN_AFFECT_LIVE)
        return {v: tuple(c for c, on in enumerate(cpus) if on)
                for v, cpus in enumerate(info)}

    def host_cpus(self):
        """The host CPUs libvirt reports."""
        return tuple(range(self.conn.getInfo()[2]))

    def agent_record(self, uuid):
        """The agent's pin record in the live XML, or None."""
        dom = self.conn.lookupByUUIDString(uuid)
        try:
            return dom.metadata(self.libvirt.VIR_DOMAIN_METADATA_ELEMENT,
                                AGENT_NS, self.libvirt.VIR_DOMAIN_AFFECT_LIVE)
        except self.libvirt.libvirtError:
            return None
