"""The ``cacheaware:`` flavor extra-spec vocabulary and its one validation.

Pure module (no nova import): the scheduler plugins, the Nova API validators
(:mod:`nova_cacheaware.api.extra_specs`), the CLI and the agent all read the
vocabulary from :data:`VOCABULARY` and check values with
:func:`validate_value`, so the accepted keys and values cannot drift apart.
Code names a key through the constants below (:data:`WORKLOAD`, ...), never
as a raw ``'cacheaware:...'`` string.
"""

import dataclasses
import typing as ty

from nova_cacheaware.contracts import placement
from nova_cacheaware import exception

PREFIX = placement.EXTRA_SPEC_NAMESPACE + ':'
MEMORY_MIN_MB_FLOOR = 128


@dataclasses.dataclass(frozen=True)
class SpecKey:
    """One ``cacheaware:`` key: its values (an enum, or an int minimum)."""

    key: str
    description: str
    choices: ty.Tuple[str, ...] = ()
    default: ty.Optional[str] = None
    int_min: ty.Optional[int] = None

    @property
    def name(self):
        """The full extra-spec name, ``cacheaware:<key>``."""
        return PREFIX + self.key


VOCABULARY = (
    SpecKey('cache_share', choices=('all', 'any'), default='any',
            description='all: every vCPU of the instance runs on host CPUs '
                        'that share one cache domain (placement-enforced '
                        'through the cache-domain resource providers); '
                        'any: no constraint.'),
    SpecKey('workload', choices=('memory', 'cpu', 'io', 'auto'),
            default='auto',
            description='Declared workload class. memory-bound instances '
                        'are kept out of domains holding other memory-bound '
                        'instances; auto lets the compute agent classify the '
                        'instance at run time.'),
    SpecKey('cache_clean', choices=('required', 'preferred', 'off'),
            default='preferred',
            description='required: a memory-bound instance only lands in a '
                        'cache domain without another memory-bound instance '
                        '(Clean); preferred: such domains are preferred by '
                        'the weigher; off: no preference.'),
    SpecKey('vcpu_sizing', choices=('off', 'recommend', 'apply'),
            default='off',
            description='pCPU-Est vCPU sizing: recommend reports the vCPU '
                        'count matching the pCPUs the instance really gets; '
                        'apply also offlines surplus vCPUs through the guest '
                        'helper.'),
    SpecKey('memory_policy', choices=('static', 'hit_ratio'),
            default='static',
            description='static: memory stays as sized by the flavor; '
                        'hit_ratio: the agent balloons memory between '
                        'instances by page-cache hit ratio.'),
    SpecKey('memory_min_mb', int_min=MEMORY_MIN_MB_FLOOR,
            description='Floor in MiB below which hit-ratio ballooning never '
                        'shrinks the instance (at least %d).'
                        % MEMORY_MIN_MB_FLOOR),
    SpecKey('numa', choices=('any', 'full'), default='any',
            description='full: the guest gets a full mirror of the host NUMA '
                        'topology and the agent hands CPUs and memory between '
                        'nodes at run time; any: no constraint.'),
    SpecKey('rebalance', choices=('yes', 'no'), default='yes',
            description='no: the nova-cacheaware Watcher strategy never '
                        'live-migrates instances of this flavor (also '
                        'honoured as server metadata); yes: it may move '
                        'them to restore Clean and All-share domains.'),
)

_BY_KEY = {spec.key: spec for spec in VOCABULARY}

# The full names of the keys, for code that reads one key of a flavor's
# extra specs: no raw ``'cacheaware:...'`` strings outside this module.
CACHE_SHARE = _BY_KEY['cache_share'].name
WORKLOAD = _BY_KEY['workload'].name
CACHE_CLEAN = _BY_KEY['cache_clean'].name
VCPU_SIZING = _BY_KEY['vcpu_sizing'].name
MEMORY_POLICY = _BY_KEY['memory_policy'].name
MEMORY_MIN_MB = _BY_KEY['memory_min_mb'].name
NUMA = _BY_KEY['numa'].name
REBALANCE = _BY_KEY['rebalance'].name


@dataclasses.dataclass(frozen=True)
class CacheAwareRequest:
    """What a flavor asks of nova-cacheaware; defaults where keys are absent.

    ``present`` is False when the flavor has no ``cacheaware:`` key at all:
    then every plugin leaves the request exactly as Nova would treat it.
    """

    present: bool = False
    cache_share: str = 'any'
    workload: str = 'auto'
    cache_clean: str = 'preferred'
    vcpu_sizing: str = 'off'
    memory_policy: str = 'static'
    memory_min_mb: ty.Optional[int] = None
    numa: str = 'any'
    rebalance: str = 'yes'

    @property
    def all_share(self):
        """True when every vCPU must share one cache domain."""
        return self.cache_share == 'all'

    @property
    def may_be_memory_bound(self):
        """True for declared memory-bound and for auto-classified requests.

        ``auto`` counts because the agent may find the instance memory-bound
        later; placing it in an Empty domain keeps that cheap.
        """
        return self.workload in ('memory', 'auto')

    @property
    def clean_required(self):
        """True when a domain holding a memory-bound VM is forbidden.

        Only meaningful for a declared memory-bound workload.
        """
        return self.workload == 'memory' and self.cache_clean == 'required'

    @property
    def clean_wanted(self):
        """True when the weigher should prefer Empty/Clean domains."""
        return self.may_be_memory_bound and self.cache_clean != 'off'


def validate_value(name, value):
    """Check one ``cacheaware:`` extra spec; return its parsed value.

    Raises :class:`~nova_cacheaware.exception.InvalidInput` naming the key
    and the accepted values for an unknown key or a bad value.
    """
    if not name.startswith(PREFIX):
        raise exception.InvalidInput(
            reason='%s is not a %s extra spec' % (name, PREFIX))
    spec = _BY_KEY.get(name[len(PREFIX):])
    if spec is None:
        raise exception.InvalidInput(
            reason='unknown extra spec %s; known: %s' % (
                name, ', '.join(s.name for s in VOCABULARY)))
    if spec.int_min is not None:
        try:
            number = int(str(value).strip())
        except ValueError:
            number = None
        if number is None or number < spec.int_min:
            raise exception.InvalidInput(
                reason='%s must be an integer >= %d, not %r' % (
                    name, spec.int_min, value))
        return number
    if value not in spec.choices:
        raise exception.InvalidInput(
            reason='%s must be one of %s, not %r' % (
                name, ', '.join(spec.choices), value))
    return value


def parse_extra_specs(extra_specs):
    """Turn a flavor's extra specs into a :class:`CacheAwareRequest`.

    Keys outside the ``cacheaware:`` namespace are ignored; unknown
    ``cacheaware:`` keys and bad values raise
    :class:`~nova_cacheaware.exception.InvalidInput`.
    """
    values = {}
    for name, value in (extra_specs or {}).items():
        if name.startswith(PREFIX):
            values[name[len(PREFIX):]] = validate_value(name, value)
    if not values:
        return CacheAwareRequest()
    return CacheAwareRequest(present=True, **values)
