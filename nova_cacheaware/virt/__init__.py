"""The hypervisor port: the only code that talks to libvirt.

Everything the agent, its capabilities and the topology reader need from
libvirt goes through this package, as typed reads and writes:

* :mod:`.binding` imports libvirt-python and libvirt_qemu (lazily, so pure
  modules and unit tests never need them) and knows the test driver's
  quirks;
* :mod:`.errors` holds the typed failures (:class:`~.errors.DomainGone`,
  :class:`~.errors.HypervisorUnavailable`, the guest agent's);
* :mod:`.domain` is one domain: XML, live pins, metadata, scheduler caps,
  memory and balloon, virtio-mem, vCPU pins, guest-agent and monitor
  commands, with the one "no such domain" -> ``DomainGone`` translation;
* :mod:`.connection` is the connection: reconnect and retry once, the
  domain filter, host CPUs, statistics of all domains, lifecycle events;
* :mod:`.caps` reads the host capabilities XML on a read-only connection.

The agent's loop sees the narrower
:class:`nova_cacheaware.agent.hypervisor.Hypervisor` built on top of it.
This package imports nothing from the agent (no package cycle): the agent
hands in what it needs, e.g. the OS-thread starter of the event loop.
"""
