"""Rules between a flavor's extra specs: what no single key can check.

Nova's extra-spec validators (:mod:`nova_cacheaware.api.extra_specs`) see
one key and its value at a time, so a flavor written through Nova's API
can carry keys that contradict each other or the flavor itself. This pure
module (no nova import) lists those contradictions; the scheduler's
``CacheDomainFilter`` refuses such a flavor on every host and
``nova-cacheaware flavor check`` reports them and ``flavor set`` refuses
them, with these messages.

The Placement keys that enforce the options (``resources_CACHE:...``) are
not checked here: the filter checks what each allocation candidate really
claims, and ``flavor check`` compares them with what ``flavor set`` would
write (:func:`nova_cacheaware.api.flavor_specs.audit`).
"""

from nova_cacheaware.contracts import extra_specs as specs
from nova_cacheaware import exception


def contradictions(extra_specs, ram_mb=None):
    """Every contradiction in a flavor's extra specs, as sentences.

    :param extra_specs: the flavor's extra specs (all keys, not only ours).
    :param ram_mb: the flavor's RAM in MiB (None: not known, the rule on
        it is skipped; no rule needs the vCPU count).
    :returns: a list of operator-actionable messages; empty when the
        flavor is consistent (or has no ``cacheaware:`` key at all).

    A key that is wrong on its own (unknown key, bad value) is reported
    first; the rules between keys are checked only on valid keys.
    """
    try:
        request = specs.parse_extra_specs(extra_specs)
    except exception.InvalidInput as e:
        return [str(e)]
    return request_contradictions(request, ram_mb)


def request_contradictions(request, ram_mb=None):
    """:func:`contradictions` of an already parsed request.

    :param request: a
        :class:`~nova_cacheaware.contracts.extra_specs.CacheAwareRequest`.
    :param ram_mb: the flavor's RAM in MiB (None: the rule on it is skipped).
    """
    if not request.present:
        return []
    problems = []
    if (ram_mb is not None and request.memory_min_mb is not None
            and request.memory_min_mb > ram_mb):
        problems.append(
            "%smemory_min_mb=%d is above the flavor's RAM (%d MB): the "
            'balloon floor must be at most the RAM'
            % (specs.PREFIX, request.memory_min_mb, ram_mb))
    if request.clean_required and not request.all_share:
        problems.append(
            '%scache_clean=required with workload=memory needs '
            'cache_share=all (it has %s): Placement can keep a domain '
            'Clean only for a VM that lives in one domain'
            % (specs.PREFIX, request.cache_share))
    return problems
