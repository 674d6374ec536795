"""An independent reference for pCPU-Est: max-min fairness by sequential LP.

Tests only (scipy/HiGHS, floating point, tolerance ~1e-9): it shares no code
with :mod:`nova_cacheaware.pcpu_est.estimate`.
"""

import numpy as np
from scipy import optimize

_EPS = 1e-9


def lp_max_min_shares(affinities, caps=None, pcpus=None):
    """vCPU key -> float share, by the textbook sequential-LP method.

    Round after round: maximise the common minimum ``t`` of the unfrozen
    vCPUs; then every unfrozen vCPU that cannot exceed ``t`` while the
    others keep ``t`` is frozen at ``t``.
    """
    caps = caps or {}
    keys = list(affinities)
    edges = []
    for i, key in enumerate(keys):
        for p in sorted(set(affinities[key])):
            if pcpus is None or p in pcpus:
                edges.append((i, p))
    cpus = sorted({p for _, p in edges})
    n_e = len(edges)
    frozen = {}
    for i, key in enumerate(keys):
        if not any(v == i for v, _ in edges) or caps.get(key, 1.0) == 0:
            frozen[i] = 0.0
    # Variables: one flow per edge, then t.
    a_cpu = np.zeros((len(cpus), n_e + 1))
    for j, (v, p) in enumerate(edges):
        a_cpu[cpus.index(p), j] = 1.0
    a_vcpu = np.zeros((len(keys), n_e + 1))
    for j, (v, p) in enumerate(edges):
        a_vcpu[v, j] = 1.0
    cap_vec = np.array([float(caps.get(k, 1.0)) for k in keys])

    def solve(objective, unfrozen, t_floor=None):
        a_ub = [a_cpu, a_vcpu]
        b_ub = [np.ones(len(cpus)), cap_vec]
        a_eq, b_eq = [], []
        for i, value in frozen.items():
            row = a_vcpu[i].copy()
            a_ub.append(row[None, :])
            b_ub.append(np.array([value + _EPS]))
            a_ub.append(-row[None, :])
            b_ub.append(np.array([-(value - _EPS)]))
        for i in unfrozen:
            row = -a_vcpu[i].copy()
            if t_floor is None:
                row[n_e] = 1.0             # t - x_i <= 0
                a_ub.append(row[None, :])
                b_ub.append(np.array([0.0]))
            else:
                a_ub.append(row[None, :])
                b_ub.append(np.array([-(t_floor - _EPS)]))
        res = optimize.linprog(
            objective, A_ub=np.vstack(a_ub), b_ub=np.concatenate(b_ub),
            A_eq=np.vstack(a_eq) if a_eq else None,
            b_eq=np.array(b_eq) if b_eq else None,
            bounds=[(0, None)] * n_e + [(0, None)], method='highs')
        assert res.status == 0, res.message
        return -res.fun

    while len(frozen) < len(keys):
        unfrozen = [i for i in range(len(keys)) if i not in frozen]
        objective = np.zeros(n_e + 1)
        objective[n_e] = -1.0
        t = solve(objective, unfrozen)
        newly = []
        for i in unfrozen:
            objective = -a_vcpu[i].copy()
            best = solve(objective, unfrozen, t_floor=t)
            if best <= t + 1e-7:
                newly.append(i)
        assert newly, 'sequential LP made no progress'
        for i in newly:
            frozen[i] = t
    return {key: frozen[i] for i, key in enumerate(keys)}


def _flow_lp(affinities, caps, keys):
    """Edges, and the per-pCPU and per-vCPU constraint rows, for ``keys``."""
    edges = [(i, p) for i, key in enumerate(keys)
             for p in sorted(set(affinities[key]))]
    cpus = sorted({p for _, p in edges})
    a_cpu = np.zeros((len(cpus), len(edges)))
    a_vcpu = np.zeros((len(keys), len(edges)))
    for j, (i, p) in enumerate(edges):
        a_cpu[cpus.index(p), j] = 1.0
        a_vcpu[i, j] = 1.0
    caps_vec = np.array([float(caps.get(k, 1.0)) for k in keys])
    return edges, a_cpu, a_vcpu, caps_vec


def lp_max_total(affinities, caps, keys):
    """The most pCPU time the vCPUs ``keys`` can get together (alone)."""
    keys = list(keys)
    edges, a_cpu, a_vcpu, caps_vec = _flow_lp(affinities, caps, keys)
    if not edges:
        return 0.0
    res = optimize.linprog(
        -np.ones(len(edges)), A_ub=np.vstack([a_cpu, a_vcpu]),
        b_ub=np.concatenate([np.ones(a_cpu.shape[0]), caps_vec]),
        bounds=[(0, None)] * len(edges), method='highs')
    assert res.status == 0, res.message
    return -res.fun


def lp_feasible(affinities, caps, shares):
    """True if every vCPU can get exactly ``shares[key]`` at once."""
    keys = list(affinities)
    edges, a_cpu, a_vcpu, caps_vec = _flow_lp(affinities, caps, keys)
    want = np.array([float(shares[k]) for k in keys])
    if not edges:
        return bool(np.all(want == 0))
    res = optimize.linprog(
        np.zeros(len(edges)), A_ub=a_cpu,
        b_ub=np.ones(a_cpu.shape[0]) + _EPS, A_eq=a_vcpu, b_eq=want,
        bounds=[(0, None)] * len(edges), method='highs')
    return res.status == 0 and bool(np.all(want <= caps_vec + _EPS))
