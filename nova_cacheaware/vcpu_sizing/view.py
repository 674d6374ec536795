"""What the ``vcpu_sizing`` capability reads and writes on domains.

Over the hypervisor port (:mod:`nova_cacheaware.virt`): every running
domain's vCPU affinities and caps (``<cputune>`` ``quota``/``period`` and
``global_quota``, or the live ``vcpu_quota``/``global_quota`` scheduler
parameters where libvirt has them), the ``vm`` statistics group, and the
capability's own metadata element (namespace :data:`METADATA_NS`).
"""

import logging
from xml.etree import ElementTree

from nova_cacheaware.agent import hypervisor as hv
from nova_cacheaware import exception
from nova_cacheaware.pcpu_est import estimate as pcpu_est
from nova_cacheaware.topology import cpulist
from nova_cacheaware.vcpu_sizing import policy

LOG = logging.getLogger(__name__)

#: Namespace and key of this capability's domain metadata element.
METADATA_NS = 'http://openstack.org/xmlns/nova-cacheaware/vcpu-sizing/1.0'
METADATA_KEY = 'cacheaware-sizing'


def caps_from_xml(xml, vcpus):
    """``{vcpu: cap}`` from a domain XML's ``<cputune>`` (empty: no cap).

    ``quota``/``period`` cap each vCPU; ``global_quota``/``global_period``
    cap the whole domain and are spread evenly over its vCPUs.
    """
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError as e:
        raise exception.InvalidInput(reason='domain XML: %s' % e) from None

    def text(name):
        el = root.find('cputune/' + name)
        return None if el is None or el.text is None else el.text.strip()

    return _caps(text('quota'), text('period'), text('global_quota'),
                 text('global_period'), vcpus)


def caps_from_params(params, vcpus):
    """``{vcpu: cap}`` from live scheduler parameters; None if they lack it.

    ``params`` is ``schedulerParametersFlags()``: qemu has ``vcpu_quota``,
    ``vcpu_period``, ``global_quota``, ``global_period``; other drivers
    have none of these (None: use the XML).
    """
    if not any(k in params for k in ('vcpu_quota', 'global_quota')):
        return None
    return _caps(params.get('vcpu_quota'), params.get('vcpu_period'),
                 params.get('global_quota'), params.get('global_period'),
                 vcpus)


def _caps(quota, period, global_quota, global_period, vcpus):
    if vcpus < 1:
        return {}
    cap = policy.combine_caps(
        policy.cap_from_quota(quota, period),
        policy.cap_from_quota(global_quota, global_period, vcpus))
    return {} if cap is None or cap >= 1.0 else {
        v: cap for v in range(vcpus)}


def parse_metadata(xml):
    """``(mode, offlined vCPUs)`` from this capability's metadata element."""
    try:
        root = ElementTree.fromstring(xml)
        return (root.get('mode'),
                frozenset(cpulist.parse_cpulist(root.get('offlined') or '')))
    except (ElementTree.ParseError, ValueError) as e:
        raise exception.InvalidInput(
            reason='vcpu_sizing metadata: %s' % e) from None


def metadata_xml(mode, estimate, offlined):
    """This capability's metadata element (attributes only)."""
    el = ElementTree.Element('sizing', {
        'mode': mode,
        'available_pcpus': '%.6f' % estimate.available_pcpus,
        'recommended_vcpus': str(estimate.recommended_vcpus),
        'offlined': cpulist.format_cpulist(sorted(offlined)),
    })
    return ElementTree.tostring(el, encoding='unicode')


class LibvirtView:
    """What :class:`~.vcpu_sizing.VcpuSizing` reads and writes on domains."""

    def __init__(self, hypervisor):
        self.hypervisor = hypervisor

    def domains(self, instances):
        """``{uuid: VMAffinity}`` of every running domain the agent sees.

        Nova instances take their live pinning from ``instances``; other
        domains (not Nova's, still using the pCPUs) are read here.
        """
        known = {i.uuid: i for i in instances}

        def collect(conn):
            out = {}
            for dom in self.hypervisor.active_domains(conn):
                try:
                    out[dom.uuid] = _affinity(dom, known.get(dom.uuid))
                except hv.DomainGone:
                    pass
                except exception.InvalidInput as e:
                    LOG.warning('vcpu_sizing: skipping domain %s: %s',
                                dom.uuid, e)
            return out

        return self.hypervisor.call(collect)

    def kvm_stats(self):
        """``{uuid: {stat: value}}`` of the ``vm`` statistics group.

        Keeps the exit and yield counters only; None when this libvirt or
        driver has no such group.
        """
        stats = self.hypervisor.domain_stats('VM')
        if stats is None:
            return None
        return {uuid: {k: v for k, v in per.items()
                       if isinstance(v, (int, float))
                       and ('exit' in k or 'yield' in k)}
                for uuid, per in stats.items()}

    def metadata(self, uuid):
        """This capability's metadata element of ``uuid``, or None."""
        return self.hypervisor.on_domain(
            uuid, lambda dom: dom.metadata(METADATA_NS))

    def set_metadata(self, uuid, xml):
        """Set (``xml``) or remove (None) the element on the live domain."""
        self.hypervisor.on_domain(uuid, lambda dom: dom.set_metadata(
            METADATA_NS, METADATA_KEY, xml))


def _affinity(dom, instance):
    """The :class:`~.pcpu_est.VMAffinity` of a port ``Domain``."""
    if instance is not None:
        vcpus = dict(instance.live)
    else:
        vcpus = dom.pins()
    params = dom.scheduler_params()
    caps = (None if params is None
            else caps_from_params(params, len(vcpus)))
    if caps is None:
        caps = caps_from_xml(dom.xml(), len(vcpus))
    caps = {v: c for v, c in caps.items() if v in vcpus}
    return pcpu_est.VMAffinity(vcpus=vcpus, caps=caps)
