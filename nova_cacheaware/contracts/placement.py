"""Placement names that are public contracts (doc/source/admin/placement.rst).

Resource classes and traits are custom names made by os-resource-classes'
and os-traits' ``normalize_name`` (``CUSTOM_`` prefix, upper case).
Provider names and the uuids of new domain providers are derived here, so
the agent, the scheduler and the tools agree on them.
"""

import uuid

import os_resource_classes as orc
import os_traits

RC_DOMAIN_VCPU = orc.normalize_name('CACHE_DOMAIN_VCPU')
RC_DOMAIN_MEMBOUND = orc.normalize_name('CACHE_DOMAIN_MEMBOUND')
TRAIT_DOMAIN = os_traits.normalize_name('CACHEAWARE_DOMAIN')
TRAIT_AGENT = os_traits.normalize_name('CACHEAWARE_AGENT')
#: Prefix of the cache level traits (``CUSTOM_CACHE_L3``).
TRAIT_CACHE_LEVEL_PREFIX = os_traits.normalize_name('CACHE_L')
EXTRA_SPEC_NAMESPACE = 'cacheaware'


def is_ours(provider_name):
    """True for a provider name of ours: a domain or a host provider."""
    return (provider_name.endswith(':cacheaware')
            or ':cacheaware:' in provider_name)


def cache_level_trait(level):
    """``CUSTOM_CACHE_L3`` for level 3; the trait put on each domain child."""
    return '%s%d' % (TRAIT_CACHE_LEVEL_PREFIX, level)


def domain_provider_name(compute_rp_name, domain_id):
    """Name of a cache domain's child provider under a compute node RP.

    Never ``<nodename>_<...>``: nova deletes such children.
    """
    return '%s:cacheaware:%s' % (compute_rp_name, domain_id)


def host_provider_name(compute_rp_name):
    """Name of the host's one cache provider (``provider_model = host``).

    ``<compute node RP name>:cacheaware``: the domain providers' prefix
    without a domain id, so it can never collide with one of them.
    """
    return '%s:cacheaware' % compute_rp_name


def domain_provider_uuid(compute_rp_uuid, domain_id):
    """The uuid a new domain provider gets: stable per (root, domain).

    ``uuid5(<compute node RP uuid>, 'cacheaware:<domain id>')``.
    """
    return str(uuid.uuid5(uuid.UUID(compute_rp_uuid), '%s:%s'
                          % (EXTRA_SPEC_NAMESPACE, domain_id)))
