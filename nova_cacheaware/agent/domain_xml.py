"""Read what Nova wrote into a libvirt domain XML (pure: strings in/out).

Nova describes the instance in ``<metadata><nova:instance>`` (name, flavor)
and decides which host CPUs the guest may use:

* floating, no guest NUMA topology: ``<vcpu cpuset='...'>`` (the host's
  ``cpu_shared_set``) and no ``<vcpupin>``; without ``cpu_shared_set`` there is
  no cpuset at all and every host CPU is allowed;
* floating with ``hw:numa_nodes``: one ``<vcpupin>`` per vCPU, each to the
  shared CPUs of the vCPU's host NUMA cell;
* dedicated (``hw:cpu_policy=dedicated``): one ``<vcpupin>`` per vCPU, each to
  exactly one host CPU, distinct from the others.

The agent's own pins are live-only, so the persistent (inactive) XML keeps
Nova's decision: :func:`parse_nova_domain` reads the allowed CPUs from it.
The agent also records, in its own metadata element, which pins it changed,
so that the libvirt migration hook can undo exactly those (see
``nova_cacheaware/agent/libvirt_hook.py``).
"""

import dataclasses
import re
import typing as ty
from xml.etree import ElementTree

from nova_cacheaware import exception
from nova_cacheaware.topology import cpulist

NOVA_NS_PREFIX = 'http://openstack.org/xmlns/libvirt/nova/'
#: Namespace of the agent's metadata element (also hard-coded in the hook).
AGENT_NS = 'http://openstack.org/xmlns/nova-cacheaware/agent/1.0'
AGENT_KEY = 'cacheaware'


@dataclasses.dataclass(frozen=True)
class NovaDomain:
    """One Nova instance as its domain XML describes it.

    ``allowed`` maps each vCPU index to the host CPUs Nova allows it (from the
    inactive XML); ``nova_pinned`` is True when Nova wrote ``<vcpupin>``
    elements (NUMA-pinned floating or dedicated instances), ``dedicated`` when
    every vCPU is pinned to a single, distinct host CPU.
    """

    uuid: str
    name: str
    instance_name: str
    flavor: str
    vcpus: int
    allowed: ty.Dict[int, ty.Tuple[int, ...]]
    nova_pinned: bool
    dedicated: bool


def _local(tag):
    return tag.rsplit('}', 1)[-1]


def _parse(xml, what):
    try:
        return ElementTree.fromstring(xml)
    except ElementTree.ParseError as e:
        raise exception.InvalidInput(
            reason='%s is not valid XML: %s' % (what, e)) from None


def find_nova_instance(root):
    """The ``<nova:instance>`` element of a domain, or None if not Nova's."""
    metadata = root.find('metadata')
    if metadata is None:
        return None
    for child in metadata:
        if (child.tag.startswith('{' + NOVA_NS_PREFIX)
                and _local(child.tag) == 'instance'):
            return child
    return None


def _child_text(element, name):
    for child in element:
        if _local(child.tag) == name:
            return child
    return None


def vcpu_count(root):
    """Number of vCPUs the domain XML declares (``<vcpu current=>`` first)."""
    vcpu = root.find('vcpu')
    if vcpu is None or not (vcpu.text or '').strip().isdigit():
        raise exception.InvalidInput(reason='domain XML has no <vcpu> count')
    current = vcpu.get('current')
    return int(current) if current and current.isdigit() else int(vcpu.text)


def vcpupins(root):
    """``{vcpu: cpus}`` of the ``<cputune><vcpupin>`` elements."""
    pins = {}
    for pin in root.findall('cputune/vcpupin'):
        pins[int(pin.get('vcpu'))] = cpulist.parse_cpulist(
            pin.get('cpuset', ''))
    return pins


def allowed_cpus(root, host_cpus):
    """Per-vCPU CPUs that the XML allows, with ``host_cpus`` as the default.

    ``<vcpupin>`` wins for its vCPU, then ``<vcpu cpuset>``, then every host
    CPU. Returns ``(allowed, pinned_by_xml)``.
    """
    count = vcpu_count(root)
    vcpu = root.find('vcpu')
    default = tuple(sorted(host_cpus))
    if vcpu.get('cpuset'):
        default = cpulist.parse_cpulist(vcpu.get('cpuset'))
    pins = vcpupins(root)
    allowed = {i: pins.get(i, default) for i in range(count)}
    return allowed, bool(pins)


def parse_nova_domain(live_xml, inactive_xml, host_cpus):
    """Build a :class:`NovaDomain`, or None when the domain is not Nova's.

    ``live_xml`` gives the identity (uuid, name, metadata); ``inactive_xml``
    (``VIR_DOMAIN_XML_INACTIVE``) gives Nova's allowed CPUs. Raises
    :class:`InvalidInput` for XML that cannot be parsed.
    """
    live = _parse(live_xml, 'live domain XML')
    nova = find_nova_instance(live)
    if nova is None:
        return None
    config = _parse(inactive_xml, 'inactive domain XML')
    allowed, pinned = allowed_cpus(config, host_cpus)
    name_el = _child_text(nova, 'name')
    flavor_el = _child_text(nova, 'flavor')
    flavor_vcpus = (_child_text(flavor_el, 'vcpus')
                    if flavor_el is not None else None)
    vcpus = (int(flavor_vcpus.text) if flavor_vcpus is not None
             and (flavor_vcpus.text or '').strip().isdigit()
             else len(allowed))
    singles = [cpus[0] for cpus in allowed.values() if len(cpus) == 1]
    dedicated = (pinned and len(singles) == len(allowed)
                 and len(set(singles)) == len(singles))
    return NovaDomain(
        uuid=(live.findtext('uuid') or '').strip(),
        name=(live.findtext('name') or '').strip(),
        instance_name=(name_el.text or '').strip() if name_el is not None
        else '',
        flavor=flavor_el.get('name', '') if flavor_el is not None else '',
        vcpus=vcpus,
        allowed=allowed,
        nova_pinned=pinned,
        dedicated=dedicated)


#: Nova's default ``[DEFAULT] instance_name_template``, ``instance-%08x``.
_DEFAULT_NAME = re.compile(r'^instance-([0-9a-f]{8,16})$')


def creation_order(name):
    """Nova's database id of the instance a libvirt domain ``name`` names.

    Nova names domains ``instance-%08x`` of the instance's id unless
    ``instance_name_template`` says otherwise; the ids grow in the order
    the conductor creates the instances - for a multi-create, the order
    the scheduler claimed them in. None for any other name.
    """
    match = _DEFAULT_NAME.match(name or '')
    return int(match.group(1), 16) if match else None


def parse_agent_pins(xml):
    """vCPU ids listed in the agent's metadata element (a frozenset).

    ``xml`` is the element as ``virDomainGetMetadata`` returns it.
    """
    root = _parse(xml, 'agent metadata')
    ids = set()
    for vcpu in root:
        if _local(vcpu.tag) == 'vcpu' and (vcpu.get('id') or '').isdigit():
            ids.add(int(vcpu.get('id')))
    return frozenset(ids)


def agent_pins_metadata(allowed, nova_pinned, pinned_vcpus):
    """The agent's metadata element recording which vCPUs it repinned.

    For each vCPU it records Nova's own ``<vcpupin>`` cpuset, empty when Nova
    wrote none; the migration hook removes the pins whose Nova cpuset is
    empty and leaves Nova's own ones to Nova.
    """
    parts = []
    for vcpu in sorted(pinned_vcpus):
        nova = cpulist.format_cpulist(allowed[vcpu]) if nova_pinned else ''
        parts.append('<vcpu id="%d" nova_cpuset="%s"/>' % (vcpu, nova))
    return '<pins>%s</pins>' % ''.join(parts)
