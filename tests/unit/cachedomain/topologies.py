"""Named cache-domain layouts shared by the planner and simulator tests."""


def _domains(prefix, sizes, first_cpu=0, first_index=0):
    result, cpu = [], first_cpu
    for n, size in enumerate(sizes):
        result.append({'id': '%s-%d' % (prefix, first_index + n),
                       'cpus': list(range(cpu, cpu + size))})
        cpu += size
    return result


# Core 2 Quad Q6600 (study 000): two chips, each two cores sharing an L2.
Q6600 = _domains('L2', [2, 2])

# AMD EPYC (Zen 3, 32 CPUs shown): four CCXs of 8 CPUs sharing an L3.
EPYC_CCX8 = _domains('L3', [8, 8, 8, 8])

# Intel hybrid (Alder Lake-like): four SMT P-cores with a private L2 each
# (2 CPUs per domain) and two E-core clusters of 4 sharing an L2.
HYBRID_ECORE = _domains('L2', [2, 2, 2, 2, 4, 4])

# Uneven domains (partly offlined CPUs, or an odd part).
UNEVEN = [{'id': 'A', 'cpus': list(range(0, 6))},
          {'id': 'B', 'cpus': list(range(6, 10))},
          {'id': 'C', 'cpus': [10, 11]}]

# A large host: 256 CPUs in 32 domains of 8.
BIG_32X8 = _domains('L3', [8] * 32)

ALL = {'q6600': Q6600, 'epyc-ccx8': EPYC_CCX8, 'hybrid-ecore': HYBRID_ECORE,
       'uneven': UNEVEN}
