"""A host's vCPU affinities and caps, and pCPU-Est's answer, as documents.

The input of ``nova-cacheaware pcpu-est`` and the ``vcpu_affinity`` field
of the live-state payload (1.1+): ``{"pcpus": [...], "vms": {name:
{"vcpus": {index: [pCPU...]}, "caps": {index: cap}}}}``; and the estimate's
output, ``{"vms": {name: {"available_pcpus", "recommended_vcpus",
"vcpus"}}}``. The estimate itself is :mod:`nova_cacheaware.policy.pcpu_est`.
"""

import collections
import dataclasses

from nova_cacheaware.contracts import limits
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
        if not isinstance(doc, dict):
            _bad('the document must be a JSON object')
        _no_unknown_keys(doc, _REQUEST_KEYS, 'the document')
        pcpus = None
        if 'pcpus' in doc:
            pcpus = _pcpu_list(doc['pcpus'], '"pcpus"')
        if 'vms' not in doc:
            _bad('"vms" is required')
        vms_doc = doc['vms']
        if not isinstance(vms_doc, dict):
            _bad('"vms" must be an object of VM name -> VM')
        vms = {}
        seen = {}
        for name, vm_doc in vms_doc.items():
            vms[name] = _vm_from_dict(name, vm_doc, seen)
        return cls(vms=vms, pcpus=pcpus)


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


def _bad(reason):
    raise exception.InvalidInput(reason=reason)


def _no_unknown_keys(doc, allowed, where):
    unknown = sorted(set(doc) - allowed)
    if unknown:
        _bad('%s: unknown key(s) %s (allowed: %s)' % (
            where, ', '.join(repr(k) for k in unknown),
            ', '.join(sorted(allowed))))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


_INT_ONLY = frozenset({int})


def _pcpu_list_fast(value, seen):
    """The sorted tuple of a valid pCPU list, or None to check it slowly.

    Hosts publish the same affinity for many vCPUs (the whole host, a NUMA
    node, a cache domain): each distinct list is checked and sorted once
    per document, with C-level builtins; only a list that fails here goes
    through :func:`_pcpu_list`'s element-by-element checks (and messages).
    """
    if type(value) is not list or not value:
        return None
    if not set(map(type, value)) <= _INT_ONLY:
        return None                    # bools, floats, strings: slow path
    key = tuple(value)
    hit = seen.get(key)
    if hit is not None:
        return hit
    if min(value) < 0 or len(set(value)) != len(value):
        return None
    seen[key] = result = tuple(sorted(value))
    return result


def _pcpu_list(value, where):
    if not isinstance(value, list):
        _bad('%s must be a list of pCPU numbers' % where)
    for p in value:
        if not limits.is_cpu_id(p):
            _bad('%s: %r is not a pCPU number (an integer 0..%d)'
                 % (where, p, limits.MAX_CPUS - 1))
    if len(set(value)) != len(value):
        dup = sorted(p for p, n in collections.Counter(value).items()
                     if n > 1)
        _bad('%s: duplicate pCPU(s) %s' % (where, dup))
    return tuple(sorted(value))


def _index(key, where):
    # Canonical decimal only ("0", "12"): "01", "+1", " 1" would make two
    # keys name one vCPU.
    if not (isinstance(key, str) and key.isascii() and key.isdigit()
            and str(int(key)) == key and int(key) < limits.MAX_VCPUS):
        _bad('%s: vCPU index %r is not an integer 0..%d'
             % (where, key, limits.MAX_VCPUS - 1))
    return int(key)


def _vm_from_dict(name, doc, seen):
    where = 'VM %r' % name
    if not isinstance(doc, dict):
        _bad('%s must be an object' % where)
    _no_unknown_keys(doc, _VM_KEYS, where)
    vcpus_doc = doc.get('vcpus')
    if not isinstance(vcpus_doc, dict) or not vcpus_doc:
        _bad('%s: "vcpus" must be a non-empty object of vCPU index -> '
             'list of pCPUs' % where)
    vcpus = {}
    for key, affinity in vcpus_doc.items():
        index = _index(key, where)
        cpus = _pcpu_list_fast(affinity, seen)
        if cpus is None:
            cpus = _pcpu_list(affinity, '%s vCPU %s' % (where, key))
        vcpus[index] = cpus
    caps_doc = doc.get('caps', {})
    if not isinstance(caps_doc, dict):
        _bad('%s: "caps" must be an object of vCPU index -> number' % where)
    caps = {}
    for key, cap in caps_doc.items():
        index = _index(key, where + ' caps')
        if index not in vcpus:
            _bad('%s: cap for vCPU %s, which the VM does not have' % (
                where, key))
        if not (_is_int(cap) or isinstance(cap, float)) or not (
                0 <= cap <= 1):
            _bad('%s: cap of vCPU %s must be a number in 0..1, not %r' % (
                where, key, cap))
        caps[index] = float(cap)
    return VMAffinity(vcpus=vcpus, caps=caps)
