"""A host's vCPU affinities and caps, and pCPU-Est's answer, as documents.

The input of ``nova-cacheaware pcpu-est`` and the ``vcpu_affinity`` field
of the live-state payload (1.1+): ``{"pcpus": [...], "vms": {name:
{"vcpus": {index: [pCPU...]}, "caps": {index: cap}}}}``; and the estimate's
output, ``{"vms": {name: {"available_pcpus", "recommended_vcpus",
"vcpus"}}}``. The estimate itself is
:mod:`nova_cacheaware.pcpu_est.estimate`.
"""

import dataclasses

from nova_cacheaware.contracts import cpu_sets
from nova_cacheaware.contracts import schema
from nova_cacheaware import exception

_REQUEST_KEYS = frozenset({'pcpus', 'vms'})
_VM_KEYS = frozenset({'vcpus', 'caps'})


@dataclasses.dataclass(frozen=True)
class VMAffinity:
    """One VM: vCPU index -> sorted pCPU affinity, vCPU index -> cap."""

    vcpus: dict
    caps: dict = dataclasses.field(default_factory=dict)

    def cap(self, index):
        """The cap of vCPU ``index`` (1.0 when none is set)."""
        return self.caps.get(index, 1.0)

    def to_dict(self):
        """The CLI input form of this VM."""
        doc = {'vcpus': {str(i): list(a) for i, a in sorted(
            self.vcpus.items())}}
        if self.caps:
            doc['caps'] = {str(i): c for i, c in sorted(self.caps.items())}
        return doc


@dataclasses.dataclass(frozen=True)
class EstimateRequest:
    """All VMs on a host, and optionally the pCPUs guests may use."""

    vms: dict
    pcpus: tuple = None

    def flat_vcpus(self):
        """``({(vm, index): affinity}, {(vm, index): cap})`` of every vCPU."""
        affinities = {}
        caps = {}
        for name, vm in self.vms.items():
            for index, affinity in vm.vcpus.items():
                affinities[(name, index)] = affinity
                caps[(name, index)] = vm.cap(index)
        return affinities, caps

    def to_dict(self):
        """The CLI input document."""
        doc = {'vms': {name: vm.to_dict() for name, vm in self.vms.items()}}
        if self.pcpus is not None:
            doc['pcpus'] = list(self.pcpus)
        return doc

    @classmethod
    def from_dict(cls, doc):
        """Validate a CLI input document; raise :class:`InvalidInput`."""
        try:
            return cls(**_request(doc))
        except schema.SchemaError as e:
            raise exception.InvalidInput(reason=str(e)) from None


@dataclasses.dataclass(frozen=True)
class VMEstimate:
    """The estimate for one VM."""

    available_pcpus: float
    recommended_vcpus: int
    vcpus: dict

    def to_dict(self):
        """The CLI output form of this VM."""
        return {'available_pcpus': self.available_pcpus,
                'recommended_vcpus': self.recommended_vcpus,
                'vcpus': {str(i): s for i, s in sorted(self.vcpus.items())}}

    @classmethod
    def from_dict(cls, doc):
        """Inverse of :meth:`to_dict` (trusted input, e.g. a snapshot)."""
        return cls(available_pcpus=float(doc['available_pcpus']),
                   recommended_vcpus=int(doc['recommended_vcpus']),
                   vcpus={int(i): float(s) for i, s in doc['vcpus'].items()})


@dataclasses.dataclass(frozen=True)
class EstimateResult:
    """Estimates for all VMs of a request."""

    vms: dict

    def to_dict(self):
        """The CLI output document."""
        return {'vms': {n: e.to_dict() for n, e in self.vms.items()}}

    @classmethod
    def from_dict(cls, doc):
        """Inverse of :meth:`to_dict`."""
        return cls(vms={n: VMEstimate.from_dict(e)
                        for n, e in doc['vms'].items()})


_CPUS = cpu_sets.CpuList()


def _request(doc):
    """``{vms, pcpus}`` of a valid request document (SchemaError if not)."""
    if not isinstance(doc, dict):
        raise schema.SchemaError('', 'the document must be a JSON object')
    schema.only_keys(doc, _REQUEST_KEYS, 'the document')
    pcpus = None
    if 'pcpus' in doc:
        pcpus = _CPUS.check(doc['pcpus'], '"pcpus"')
    if 'vms' not in doc:
        raise schema.SchemaError('', '"vms" is required')
    vms_doc = doc['vms']
    if not isinstance(vms_doc, dict):
        raise schema.SchemaError('', '"vms" must be an object of VM name '
                                 '-> VM')
    seen = {}
    vms = {name: _vm(name, vm_doc, seen) for name, vm_doc in vms_doc.items()}
    return {'vms': vms, 'pcpus': pcpus}


def _vm(name, doc, seen):
    where = 'VM %r' % name
    if not isinstance(doc, dict):
        raise schema.SchemaError('', '%s must be an object' % where)
    schema.only_keys(doc, _VM_KEYS, where)
    vcpus_doc = doc.get('vcpus')
    if not isinstance(vcpus_doc, dict) or not vcpus_doc:
        raise schema.SchemaError(where, '"vcpus" must be a non-empty object '
                                 'of vCPU index -> list of pCPUs')
    vcpus = {}
    for key, affinity in vcpus_doc.items():
        vcpus[schema.vcpu_index(key, where)] = _CPUS.check_fast(
            affinity, '%s vCPU %s' % (where, key), seen)
    caps_doc = doc.get('caps', {})
    if not isinstance(caps_doc, dict):
        raise schema.SchemaError(where, '"caps" must be an object of vCPU '
                                 'index -> number')
    caps = {}
    for key, cap in caps_doc.items():
        index = schema.vcpu_index(key, where + ' caps')
        if index not in vcpus:
            raise schema.SchemaError(where, 'cap for vCPU %s, which the VM '
                                     'does not have' % key)
        try:
            caps[index] = float(schema.RATIO.check(cap, key, where))
        except schema.SchemaError:
            raise schema.SchemaError(
                where, 'cap of vCPU %s must be a number in 0..1, not %r'
                % (key, cap)) from None
    return VMAffinity(vcpus=vcpus, caps=caps)
