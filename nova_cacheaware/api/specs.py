"""Re-export of :mod:`nova_cacheaware.contracts.extra_specs` (old path).

Kept for the modules that still import ``nova_cacheaware.api.specs``; new
code imports the contracts package.
"""

from nova_cacheaware.contracts import extra_specs as _extra_specs

PREFIX = _extra_specs.PREFIX
MEMORY_MIN_MB_FLOOR = _extra_specs.MEMORY_MIN_MB_FLOOR
SpecKey = _extra_specs.SpecKey
VOCABULARY = _extra_specs.VOCABULARY
CACHE_SHARE = _extra_specs.CACHE_SHARE
WORKLOAD = _extra_specs.WORKLOAD
CACHE_CLEAN = _extra_specs.CACHE_CLEAN
VCPU_SIZING = _extra_specs.VCPU_SIZING
MEMORY_POLICY = _extra_specs.MEMORY_POLICY
MEMORY_MIN_MB = _extra_specs.MEMORY_MIN_MB
NUMA = _extra_specs.NUMA
CacheAwareRequest = _extra_specs.CacheAwareRequest
validate_value = _extra_specs.validate_value
parse_extra_specs = _extra_specs.parse_extra_specs
