"""Rules between a flavor's extra specs: what no single key can check.

Nova's extra-spec validators (:mod:`nova_cacheaware.api.extra_specs`) see
one key and its value at a time, so a flavor written through Nova's API
can carry keys that contradict each other or the flavor itself. This pure
module (no nova import) lists those contradictions; the scheduler's
``CacheDomainFilter`` refuses such a flavor on every host and
``nova-cacheaware flavor check`` reports them, with these messages.

The Placement keys that enforce the options (``resources_CACHE:...``) are
not checked here: the filter checks what each allocation candidate really
claims, and ``flavor check`` compares them with what ``flavor set`` would
write (:func:`nova_cacheaware.api.flavor_specs.compute_specs`).
"""

from nova_cacheaware.api import flavor_specs
from nova_cacheaware.api import specs
from nova_cacheaware import exception


def contradictions(extra_specs, ram_mb):
    """Every contradiction in a flavor's extra specs, as sentences.

    :param extra_specs: the flavor's extra specs (all keys, not only ours).
    :param ram_mb: the flavor's RAM in MiB (no rule needs the vCPU count).
    :returns: a list of operator-actionable messages; empty when the
        flavor is consistent (or has no ``cacheaware:`` key at all).

    A key that is wrong on its own (unknown key, bad value) is reported
    first; the rules between keys are checked only on valid keys.
    """
    try:
        request = specs.parse_extra_specs(extra_specs)
    except exception.InvalidInput as e:
        return [str(e)]
    if not request.present:
        return []
    problems = []
    if request.memory_min_mb is not None and request.memory_min_mb > ram_mb:
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


def audit(extra_specs, vcpus, ram_mb):
    """Everything wrong with one flavor, for ``nova-cacheaware flavor check``.

    :func:`contradictions`, then, for a consistent flavor with
    ``cacheaware:`` keys, the Placement keys that differ from what
    ``nova-cacheaware flavor set`` would write for it (a flavor written by
    hand, or before its vCPU count changed): without them Placement does
    not enforce All-share or Clean.
    """
    problems = contradictions(extra_specs, ram_mb)
    if problems or not specs.parse_extra_specs(extra_specs).present:
        return problems
    change = flavor_specs.compute_specs({}, vcpus, extra_specs,
                                        ram_mb=ram_mb)
    fix = 'rewrite it with "nova-cacheaware flavor set"'
    for key, value in sorted(change.set.items()):
        has = ('has %s' % extra_specs[key] if key in extra_specs
               else 'missing')
        problems.append('needs %s=%s (%s): %s' % (key, value, has, fix))
    for key in change.unset:
        problems.append('has %s=%s, which its %s keys do not ask for: %s'
                        % (key, extra_specs[key], specs.PREFIX, fix))
    return problems
