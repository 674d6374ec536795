"""Sizes no real host reaches: shared bounds of the JSON validators.

A CPU id or vCPU count in an input document drives how much the
algorithms build (a pinning per vCPU, a row per CPU): one absurd number
(``"vcpus": 1000000000``) would make ``plan`` run out of memory instead
of refusing the input. Every validator that reads such a number checks it
against these bounds.
"""

#: Linux's largest ``NR_CPUS`` on x86-64 (``CONFIG_MAXSMP``): CPU ids
#: are below it.
MAX_CPUS = 8192
#: KVM's most vCPUs per guest (``KVM_MAX_VCPUS`` on x86-64 since Linux
#: 5.15): vCPU counts are at most, and vCPU indexes below, this.
MAX_VCPUS = 4096


def is_cpu_id(value):
    """True for an int CPU id in ``0 .. MAX_CPUS - 1`` (not a bool)."""
    return (isinstance(value, int) and not isinstance(value, bool)
            and 0 <= value < MAX_CPUS)


def is_vcpu_count(value):
    """True for an int vCPU count in ``1 .. MAX_VCPUS`` (not a bool)."""
    return (isinstance(value, int) and not isinstance(value, bool)
            and 1 <= value <= MAX_VCPUS)
