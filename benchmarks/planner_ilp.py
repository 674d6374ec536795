"""The All-share planner on large hosts against an ILP (benchmark only).

The contract's objective, lexicographic ``(unplaced, excess, dirt,
moves)``, cannot be searched exhaustively at 32 or 64 domains. On the
speed benchmark's hosts (8-CPU domains, VMs of at most 4 vCPUs) every VM
fits one domain, so the heuristic's excess of 0 is optimal and the count
placed is optimal by construction; what is left is dirt. This module
solves, with ``scipy.optimize.milp`` (HiGHS), the integer program::

    x[v, d] in {0, 1}: VM v wholly in domain d (d with room for it)
    sum_d x[v, d] <= 1;  sum_{v, d} x[v, d] = the optimal count placed
    sum_v size[v] x[v, d] <= free[d]
    y[d] >= fixed[d] + sum_v x[v, d]
            + sum_v (1 - sum_e x[v, e]) [d in current_touch(v)] - 1
    y[d] >= 0;  minimise sum_d y[d]   (= dirt)

under a time limit; the solver's dual bound is a proven lower bound on the
dirt of any plan with no excess (and so of the contract's optimum), its
best solution an upper bound. Used by ``planner_bench.py``; never in
``nova_cacheaware``.
"""

import time

import numpy as np
from scipy import optimize
from scipy import sparse


def dirt_ilp(inst, time_limit=30.0, relax=False):
    """``{'best', 'bound', 'status', 'seconds'}`` of the dirt ILP.

    ``relax``: solve the LP relaxation only (a proven lower bound, no
    plan), for hosts where the ILP finds nothing in time.
    """
    n_vm, n_d = len(inst.sizes), inst.n_domains
    pairs = [(v, d) for v in range(n_vm) for d in range(n_d)
             if inst.free[d] >= inst.sizes[v]]
    n_x = len(pairs)
    n = n_x + n_d
    cost = np.zeros(n)
    cost[n_x:] = 1.0
    rows, cols, vals, lo, hi = [], [], [], [], []

    def row(entries, low, high):
        r = len(lo)
        for c, v in entries:
            rows.append(r)
            cols.append(c)
            vals.append(v)
        lo.append(low)
        hi.append(high)

    by_vm = {}
    by_d = {}
    for i, (v, d) in enumerate(pairs):
        by_vm.setdefault(v, []).append(i)
        by_d.setdefault(d, []).append(i)
    for v in range(n_vm):
        row([(i, 1.0) for i in by_vm.get(v, [])], 0, 1)
    count = sum(1 for _ in _placed(inst))
    row([(i, 1.0) for i in range(n_x)], count, count)
    for d in range(n_d):
        row([(i, float(inst.sizes[pairs[i][0]])) for i in by_d.get(d, [])],
            -np.inf, inst.free[d])
    for d in range(n_d):
        # y[d] - sum_v x[v, d] + sum_{v touching d} sum_e x[v, e]
        #   >= fixed[d] + touching(d) - 1
        coef = {n_x + d: 1.0}
        touching = [v for v in range(n_vm) if d in inst.current_touch[v]]
        for i in by_d.get(d, []):
            coef[i] = coef.get(i, 0.0) - 1.0
        for v in touching:
            for i in by_vm.get(v, []):
                coef[i] = coef.get(i, 0.0) + 1.0
        row(list(coef.items()), inst.fixed_touch[d] + len(touching) - 1,
            np.inf)
    matrix = sparse.csr_array((vals, (rows, cols)), shape=(len(lo), n))
    integrality = np.concatenate([np.zeros(n_x) if relax else np.ones(n_x),
                                  np.zeros(n_d)])
    bounds = optimize.Bounds(np.zeros(n), np.concatenate(
        [np.ones(n_x), np.full(n_d, np.inf)]))
    start = time.monotonic()
    res = optimize.milp(cost, constraints=optimize.LinearConstraint(
        matrix, lo, hi), integrality=integrality, bounds=bounds,
        options={'time_limit': time_limit})
    seconds = time.monotonic() - start
    if relax:
        return {'best': None, 'status': res.message,
                'bound': None if res.x is None else int(np.ceil(
                    res.fun - 1e-6)), 'seconds': round(seconds, 1)}
    best = None if res.x is None else round(float(res.fun))
    bound = getattr(res, 'mip_dual_bound', None)
    return {'best': best,
            'bound': None if bound is None else int(np.ceil(bound - 1e-6)),
            'status': res.message, 'seconds': round(seconds, 1)}


def _placed(inst):
    from nova_cacheaware.cachedomain import search as allshare_search
    return allshare_search.placed_set(inst)
