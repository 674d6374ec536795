"""What the guest helper would report, not the true hit ratio.

The real helper (``cacheaware-guest-stats``, validated by
:mod:`nova_cacheaware.balloon.guest_report`) estimates the hit ratio as
``1 - fetched / read`` with ``read`` the processes' ``rchar`` and
``fetched`` their ``read_bytes`` over a sample of ``sample_s`` seconds at
the end of each reporting interval.  Its known errors, and how they enter
here (doc/source/evaluation/balloon.rst gives the measured values):

``nonfile_mib_s``
    ``rchar`` also counts reads of pipes, sockets, terminals and ``/proc``
    (other processes, and the helper's own ``cat`` of ``/proc/<pid>/io``):
    MiB/s added to ``read`` that never miss, so the ratio is over-estimated,
    most for VMs that read little;
``readahead``
    ``read_bytes`` counts what was fetched, readahead included: every
    missed MiB adds ``1 + readahead`` MiB to ``fetched`` (the ratio is
    under-estimated and clamped at 0);
``blind_vms``
    VMs whose reads never reach ``read_bytes`` (files on a ``brd`` or
    ``zram`` device, which Linux 6.1 reads through ``rw_page`` without a
    bio, or a network file system that does not account them): every
    miss looks like a hit, the ratio is the read share that is non-file
    or hits, i.e. 1.0;
``cache_extra_mib``
    ``Cached`` also holds tmpfs and shared memory: MiB added to the
    reported cache size.

A guest that read nothing (no file reads and no non-file reads) reports
1.0, as the simulator always did (the agent treats "no ratio" as
satisfied).
"""

import dataclasses

from nova_cacheaware.contracts import schema
from nova_cacheaware import exception

DEFAULTS = {'nonfile_mib_s': 0.0, 'readahead': 0.0, 'blind_vms': [],
            'sample_s': None, 'cache_extra_mib': 0.0}


@dataclasses.dataclass(frozen=True)
class EstimatorModel:
    """The helper's error; all zero/None is the exact ratio."""

    nonfile_mib_s: float = 0.0
    readahead: float = 0.0
    blind_vms: tuple = ()
    #: Seconds at the end of each interval the sample covers (None: all).
    sample_s: object = None
    cache_extra_mib: float = 0.0

    def ratio(self, vm, read_mib, miss_mib, seconds):
        """The reported hit ratio of VM ``vm`` for one sample."""
        read = read_mib + self.nonfile_mib_s * seconds
        if read <= 0:
            return 1.0
        fetched = 0.0 if vm in self.blind_vms else \
            miss_mib * (1.0 + self.readahead)
        return 1.0 - min(fetched, read) / read

    def cache(self, cached_mib):
        """The reported page-cache size (Cached + Buffers) in MiB."""
        return cached_mib + self.cache_extra_mib


WHERE = 'scenario: "estimator"'


def _nonneg():
    return schema.Check(
        lambda value: schema.is_sim_number(value) and value >= 0,
        '%(where)s: "%(key)s" must be a non-negative number, not %(value)r',
        convert=float)


def _is_sample(value):
    return value is None or value > 0


def _vm_numbers(vms):
    return schema.Check(
        lambda value: isinstance(value, list) and all(
            type(v) is int and 0 <= v < vms for v in value),
        '%%(where)s: "%%(key)s" must be a list of VM numbers 0..%d'
        % (vms - 1), convert=lambda value: tuple(sorted(set(value))))


#: ``sample_s``: null (the whole interval) or a positive number.
SAMPLE = schema.All(
    schema.Check(lambda value: value is None or schema.is_sim_number(value)
                 and value >= 0, '%(where)s: "%(key)s" must be a '
                 'non-negative number, not %(value)r'),
    schema.Check(_is_sample, '%(where)s: "%(key)s" must be positive'),
    convert=lambda value: value if value is None else float(value))


def _schema(vms):
    # In the old walker's order: the VM list, the sample, then the rest.
    return {'blind_vms': (_vm_numbers(vms), ()),
            'sample_s': (SAMPLE, None),
            'nonfile_mib_s': (_nonneg(), DEFAULTS['nonfile_mib_s']),
            'readahead': (_nonneg(), DEFAULTS['readahead']),
            'cache_extra_mib': (_nonneg(), DEFAULTS['cache_extra_mib'])}


def _invalid(message):
    return exception.InvalidInput(reason=message)


def estimator_from_dict(doc, vms):
    """Validate the scenario's ``estimator`` object (None: exact ratios)."""
    if doc is None:
        return EstimatorModel()
    with schema.reraise(_invalid):
        schema.obj(doc, WHERE)
        schema.only_keys(doc, DEFAULTS, WHERE,
                         '%(where)s: unknown key(s): %(keys)s')
        return EstimatorModel(**schema.fields(doc, _schema(vms), WHERE))
