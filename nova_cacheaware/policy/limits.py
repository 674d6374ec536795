"""Re-export of :mod:`nova_cacheaware.contracts.limits` (old path)."""

from nova_cacheaware.contracts import limits as _limits

MAX_CPUS = _limits.MAX_CPUS
MAX_VCPUS = _limits.MAX_VCPUS
is_cpu_id = _limits.is_cpu_id
is_vcpu_count = _limits.is_vcpu_count
