"""Re-export of :mod:`nova_cacheaware.contracts.placement` (old path).

Kept for the modules that still import ``nova_cacheaware.names``; new code
imports the contracts package.
"""

from nova_cacheaware.contracts import placement as _placement

RC_DOMAIN_VCPU = _placement.RC_DOMAIN_VCPU
RC_DOMAIN_MEMBOUND = _placement.RC_DOMAIN_MEMBOUND
TRAIT_DOMAIN = _placement.TRAIT_DOMAIN
TRAIT_AGENT = _placement.TRAIT_AGENT
EXTRA_SPEC_NAMESPACE = _placement.EXTRA_SPEC_NAMESPACE
cache_level_trait = _placement.cache_level_trait
domain_provider_name = _placement.domain_provider_name
host_provider_name = _placement.host_provider_name
domain_provider_uuid = _placement.domain_provider_uuid
