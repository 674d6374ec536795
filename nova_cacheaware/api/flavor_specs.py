"""From ``cacheaware:`` options to the flavor extra specs that enforce them.

Pure functions: no I/O, no Nova imports. ``nova-cacheaware flavor set`` and
``flavor show-specs`` call :func:`compute_specs`; the admin guide
(doc/source/user/flavor.rst) explains each choice.

What is written, and why:

* every given option as ``cacheaware:<key>=<value>`` (the contract read by
  the validators, the scheduler plugins and the agent);
* ``cache_share=all``: the granular group
  ``resources_CACHE:CUSTOM_CACHE_DOMAIN_VCPU=<flavor vcpus>``. The group
  must be satisfied by one provider, and only cache domain providers have
  that class, so Placement returns only hosts with one domain that still
  has room for all the vCPUs, and the allocation names that domain;
* ``cache_share=all`` also adds
  ``trait_CACHE:CUSTOM_CACHEAWARE_AGENT=required``: the agent's providers
  (the one that satisfies the group) have it only while the host's agent
  is healthy, and only a running agent pins the guest into its domain.
  The trait is on the agent's own providers, never on the root, which
  nova-compute owns: a write there would move the root's generation under
  nova-compute's feet;
* ``cache_share=all`` with ``workload=memory`` and ``cache_clean=required``:
  ``resources_CACHE:CUSTOM_CACHE_DOMAIN_MEMBOUND=1`` in the same group, so
  the domain must also have its memory-bound slot free (Clean);
* ``group_policy=none`` when the flavor has none yet: Nova refuses a flavor
  whose request ends up with two or more suffixed groups (ports, PCI,
  ``hw:numa_nodes`` with PCPU...) without it, and ``none`` lets those other
  groups share providers exactly as they would without us. An existing
  ``group_policy`` (e.g. ``isolate``) is left as it is.
"""

import dataclasses
import typing as ty

from nova_cacheaware.api import spec_rules
from nova_cacheaware.contracts import extra_specs as specs
from nova_cacheaware.contracts import placement as names
from nova_cacheaware import exception

PREFIX = specs.PREFIX
GROUP = 'CACHE'
KEY_DOMAIN_VCPU = 'resources_%s:%s' % (GROUP, names.RC_DOMAIN_VCPU)
KEY_DOMAIN_MEMBOUND = 'resources_%s:%s' % (GROUP, names.RC_DOMAIN_MEMBOUND)
KEY_AGENT_TRAIT = 'trait_%s:%s' % (GROUP, names.TRAIT_AGENT)
KEY_GROUP_POLICY = 'group_policy'
#: Keys this module derives; removed again when the options stop asking.
DERIVED_KEYS = (KEY_DOMAIN_VCPU, KEY_DOMAIN_MEMBOUND, KEY_AGENT_TRAIT)

MEMORY_MIN_MB_FLOOR = specs.MEMORY_MIN_MB_FLOOR

#: option -> (allowed values or None for an integer, default); derived from
#: the one vocabulary in :mod:`nova_cacheaware.contracts.extra_specs`.
VOCABULARY = {spec.key: (spec.choices or None, spec.default)
              for spec in specs.VOCABULARY}


@dataclasses.dataclass(frozen=True)
class SpecChange:
    """Extra specs to set and keys to unset on one flavor."""

    set: ty.Dict[str, str]
    unset: ty.Tuple[str, ...]
    warnings: ty.Tuple[str, ...] = ()

    def as_properties(self):
        """``--property k=v`` lines for ``openstack flavor set``."""
        return ['--property %s=%s' % (k, v)
                for k, v in sorted(self.set.items())]


def _check_value(option, value):
    """The vocabulary's one validation, as the string written back."""
    return str(specs.validate_value(PREFIX + option, value))


def effective_options(options, current=None):
    """The ``cacheaware:`` options after applying ``options`` to ``current``.

    ``options``: ``{option: value}`` (only those given); ``current``: the
    flavor's extra specs. Values are validated; defaults fill the rest.
    """
    result = {opt: default for opt, (_a, default) in VOCABULARY.items()}
    for key, value in (current or {}).items():
        if key.startswith(PREFIX) and key[len(PREFIX):] in VOCABULARY:
            result[key[len(PREFIX):]] = value
    for option, value in options.items():
        if option not in VOCABULARY:
            raise exception.InvalidInput(
                reason='unknown option %r (known: %s)'
                       % (option, ', '.join(sorted(VOCABULARY))))
        result[option] = value
    for option, value in result.items():
        if value is not None:
            result[option] = _check_value(option, value)
    return result


def compute_specs(options, vcpus, current=None, ram_mb=None):
    """The :class:`SpecChange` that makes a flavor carry ``options``.

    :param options: ``{option: value}`` given by the admin (option names
        without the ``cacheaware:`` prefix, see :data:`VOCABULARY`).
    :param vcpus: the flavor's vCPU count (the All-share amount).
    :param current: the flavor's current extra specs (None: a new flavor).
    :param ram_mb: the flavor's RAM, to check ``memory_min_mb`` (optional).
    :raises InvalidInput: an unknown option, a bad value or a combination
        Placement cannot enforce.
    """
    if (not isinstance(vcpus, int) or isinstance(vcpus, bool)
            or vcpus < 1):
        raise exception.InvalidInput(
            reason='vcpus must be an integer >= 1, not %r' % (vcpus,))
    current = dict(current or {})
    eff = effective_options(options, current)
    problems = spec_rules.contradictions(
        {PREFIX + opt: value for opt, value in eff.items()
         if value is not None}, ram_mb)
    if problems:
        raise exception.InvalidInput(reason='; '.join(problems))
    all_share = eff['cache_share'] == 'all'
    clean_required = (eff['workload'] == 'memory'
                      and eff['cache_clean'] == 'required')

    wanted = {PREFIX + opt: eff[opt] for opt in options}
    if all_share:
        wanted[KEY_DOMAIN_VCPU] = str(vcpus)
        wanted[KEY_AGENT_TRAIT] = 'required'
        if clean_required:
            wanted[KEY_DOMAIN_MEMBOUND] = '1'
        if KEY_GROUP_POLICY not in current:
            wanted[KEY_GROUP_POLICY] = 'none'
    to_set = {k: v for k, v in wanted.items() if current.get(k) != v}
    unset = tuple(sorted(k for k in DERIVED_KEYS
                         if k in current and k not in wanted))
    warnings = []
    if all_share and current.get('hw:cpu_policy') == 'dedicated':
        warnings.append(
            'hw:cpu_policy=dedicated: Placement reserves room in one cache '
            'domain, but the agent never moves dedicated vCPUs, so Nova\'s '
            'own pinning decides whether they land there')
    if all_share and eff['workload'] == 'memory' and not clean_required:
        warnings.append(
            'workload=memory without cache_clean=required: the domain may '
            'already hold a memory-bound VM (Dirty); the weigher only '
            'prefers Clean domains')
    return SpecChange(set=to_set, unset=unset, warnings=tuple(warnings))


def audit(extra_specs, vcpus, ram_mb):
    """Everything wrong with one flavor, for ``nova-cacheaware flavor check``.

    :func:`~nova_cacheaware.api.spec_rules.contradictions`, then, for a
    consistent flavor with ``cacheaware:`` keys, the Placement keys that
    differ from what :func:`compute_specs` writes for it (a flavor written
    by hand, or before its vCPU count changed): without them Placement does
    not enforce All-share or Clean. Returns a list of sentences.
    """
    problems = spec_rules.contradictions(extra_specs, ram_mb)
    if problems or not specs.parse_extra_specs(extra_specs).present:
        return problems
    change = compute_specs({}, vcpus, extra_specs, ram_mb=ram_mb)
    fix = 'rewrite it with "nova-cacheaware flavor set"'
    for key, value in sorted(change.set.items()):
        has = ('has %s' % extra_specs[key] if key in extra_specs
               else 'missing')
        problems.append('needs %s=%s (%s): %s' % (key, value, has, fix))
    for key in change.unset:
        problems.append('has %s=%s, which its %s keys do not ask for: %s'
                        % (key, extra_specs[key], PREFIX, fix))
    return problems
