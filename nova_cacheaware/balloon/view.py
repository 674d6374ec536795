"""What the ``balloon`` capability reads and sets, and the guest helper.

:class:`LibvirtMemory` reads a domain's memory (flavor RAM, balloon size,
guest use from the balloon statistics) and sets its balloon target through
the hypervisor port; :class:`GuestHelper` runs the guest helper through the
guest agent; :func:`parse_line` decodes its one-line report.
"""

import dataclasses
import json
from xml.etree import ElementTree

from nova_cacheaware.agent import domain_xml
from nova_cacheaware.agent import guest_agent as ga_mod
from nova_cacheaware.balloon import guest_report


@dataclasses.dataclass(frozen=True)
class DomainMemory:
    """A domain's memory as the host sees it, in MiB."""

    flavor_mib: int
    current_mib: int
    #: ``available - usable`` from the balloon statistics; None: unknown.
    used_mib: object


class LibvirtMemory:
    """Read and set a domain's balloon through the hypervisor port."""

    def __init__(self, hypervisor):
        self.hypervisor = hypervisor
        self._flavor = {}  # uuid -> flavor MiB (the definition is fixed)

    def read(self, uuid):
        """:class:`DomainMemory` of ``uuid``."""
        def ask(dom):
            if uuid not in self._flavor:
                self._flavor[uuid] = _flavor_mib(dom.xml())
            stats = dom.memory_stats()
            used = None
            if 'available' in stats and 'usable' in stats:
                used = max(0, stats['available'] - stats['usable']) / 1024.0
            return DomainMemory(flavor_mib=self._flavor[uuid],
                                current_mib=int(dom.balloon_kib(stats)
                                                // 1024),
                                used_mib=used)

        return self.hypervisor.on_domain(uuid, ask)

    def set(self, uuid, mib):
        """Set the live balloon target of ``uuid`` to ``mib`` MiB."""
        self.hypervisor.on_domain(uuid, lambda dom: dom.set_memory_mib(mib))

    def forget(self, uuid):
        """Drop what is cached about ``uuid``."""
        self._flavor.pop(uuid, None)


def _flavor_mib(xml):
    """Flavor RAM: the domain's ``<memory>``, or Nova's if that is less."""
    root = ElementTree.fromstring(xml)
    kib = int(root.findtext('memory'))
    unit = (root.find('memory').get('unit') or 'KiB').lower()
    scale = {'kib': 1, 'k': 1, 'mib': 1024, 'm': 1024, 'gib': 1024 ** 2,
             'g': 1024 ** 2, 'b': 1.0 / 1024, 'bytes': 1.0 / 1024}[unit]
    mib = int(kib * scale // 1024)
    nova = domain_xml.find_nova_instance(root)
    if nova is not None:
        for el in nova.iter():
            if el.tag.rsplit('}', 1)[-1] == 'memory' and el.text:
                mib = min(mib, int(el.text))
    return mib


class GuestHelper:
    """Runs the guest helper through the guest agent, one run at a time."""

    def __init__(self, guest_agent, path, sample_s):
        self.guest_agent = guest_agent
        self.path = path
        self.sample_s = int(sample_s)

    def start(self, uuid):
        """Start a measurement; returns a token for :meth:`collect`."""
        return self.guest_agent.exec_start(uuid, self.path,
                                           [str(self.sample_s)])

    def collect(self, uuid, token):
        """The helper's stdout, or None while it runs.

        Raises :class:`~.guest_agent.GuestAgentError` when it failed.
        """
        result = self.guest_agent.exec_status(uuid, token)
        if result is None:
            return None
        code, out, err = result
        if code != 0:
            raise ga_mod.GuestAgentError(
                uuid=uuid, reason='%s exited %r: %s'
                % (self.path, code, (err or '').strip()[:200]))
        return out


def parse_line(out):
    """The one JSON line the guest helper prints, decoded."""
    line = (out or '').strip().splitlines()
    if len(line) != 1:
        raise guest_report.InvalidGuestReport(
            reason='expected one line, got %d' % len(line))
    try:
        return json.loads(line[0])
    except ValueError as e:
        raise guest_report.InvalidGuestReport(
            reason='not JSON: %s' % e) from None
