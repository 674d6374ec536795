"""``simulate cache`` on a cloud: one arrival trace, every configuration.

A trace of arrivals (Poisson) with lifetimes (exponential) is generated
from the seed; every configuration of :data:`cloud.CONFIGS` asked for runs
on the *same* trace, classifier trajectories and slice random numbers.
Every ``sample_every`` arrivals after ``warmup`` each host with guests runs
``slices`` slices of the contention model
(:func:`.contention.simulate_host`); with the agent, an
``auto`` guest is in a classifier trial (the other sharing mode) with the
schedule's probability, one trial per host at a time.

Measured per configuration, over every sample: the memory-bound VMs'
**performance** (work over what they would do alone, All share, Clean) and
**Clean time** (fraction of slices All share with no other memory-bound VM
running in the domain), both per *demand*: a rejected memory-bound VM
counts 0 for as long as it would have lived; CPU-bound VMs' performance;
requests rejected.

The **upper bound** (:func:`upper_bound`): in any slice at most one
memory-bound VM per domain is Clean, and every other memory-bound VM gets
at most ``1 / (1 + dirty_all)`` (Dirty All share; split or not running is
worse), whatever the policy - so no configuration, and no offline
optimum, can exceed it. It is computed from the trace alone.
"""

import math
import random

from nova_cacheaware_evaluation.sim import classifier_trace
from nova_cacheaware_evaluation.sim import cloud
from nova_cacheaware_evaluation.sim import contention


def make_trace(spec, rng):
    """``[(time, SimVM, lifetime, declares)]`` from the cloud spec."""
    trace, now = [], 0.0
    for n in range(spec['arrivals']):
        now += rng.expovariate(1.0 / spec['mean_interarrival'])
        workload = _weighted(rng, spec['mix'])
        vcpus = int(_weighted(rng, spec['sizes']))
        life = rng.expovariate(1.0 / spec['mean_lifetime'])
        declares = rng.random() < spec['declared']
        trace.append((now, contention.SimVM('vm%05d' % n, vcpus, workload),
                      life, declares))
    return trace


def _weighted(rng, weights):
    total = sum(weights.values())
    pick = rng.random() * total
    for key in sorted(weights):
        pick -= weights[key]
        if pick <= 0:
            return key
    return sorted(weights)[-1]


def trajectories(trace, spec, model, seed):
    """The classifier's trajectory of every VM (seconds since boot)."""
    rng = random.Random(seed)
    schedule = classifier_trace.Schedule(**spec['schedule'])
    unit = spec['time_unit_s']
    return {vm.id: tuple(classifier_trace.trajectory(
        vm.workload, vm.vcpus, life * unit, model, spec['sigma'], rng,
        schedule)) for _t, vm, life, _d in trace}


def upper_bound(trace, spec, domains_total, dirty_all):
    """Performance and Clean-time bounds per demand (see module doc)."""
    perf = clean = demand = 0.0
    for now in sample_times(trace, spec):
        m = sum(1 for t, vm, life, _d in trace
                if vm.workload == 'memory' and t <= now < t + life)
        if not m:
            continue
        ok = min(m, domains_total)
        perf += ok + (m - ok) / (1.0 + dirty_all)
        clean += ok
        demand += m
    return {'memory_perf': _ratio(perf, demand),
            'memory_clean': _ratio(clean, demand)}


def sample_times(trace, spec):
    """Times of the samples: every ``sample_every`` arrivals past warmup."""
    return [trace[n][0] for n in range(len(trace))
            if (n + 1) % spec['sample_every'] == 0 and n >= spec['warmup']]


def _ratio(a, b):
    return round(a / b, 4) if b else 1.0


def run_config(config, scenario, trace, changes):
    """One configuration on the trace; JSON-ready figures."""
    spec, model = scenario['cloud'], scenario['model']
    hosts = [cloud.Host(i, scenario['domains']) for i in range(spec['hosts'])]
    unit = spec['time_unit_s']
    rng = contention.new_rng(scenario['seed'] + 1)
    trial_rng = random.Random(scenario['seed'] + 2)
    fraction = classifier_trace.Schedule(**spec['schedule']).trial_fraction
    departures = []
    acc = _Acc()
    for n, (now, vm, life, declares) in enumerate(trace):
        departures.sort()
        while departures and departures[0][0] <= now:
            _t, hi, vm_id = departures.pop(0)
            host = hosts[hi]
            del host.guests[vm_id]
            cloud.replan(host, config, _t * unit)
        flavor = (config.memory_flavor
                  if vm.workload == 'memory' and declares
                  else config.other_flavor)
        guest = cloud.Guest(vm, cloud.request(flavor, vm.vcpus), now * unit,
                            changes[vm.id] if config.agent else ())
        host = cloud.pick_host(hosts, guest.req)
        if host is None:
            acc.rejected[vm.workload] = acc.rejected.get(vm.workload, 0) + 1
        else:
            if guest.req.group:
                guest.home = host.choose_domain(guest)
            host.guests[vm.id] = guest
            cloud.replan(host, config, now * unit)
            departures.append((now + life, host.index, vm.id))
        if (n + 1) % spec['sample_every'] or n < spec['warmup']:
            continue
        for h in hosts:
            if config.agent:
                cloud.replan(h, config, now * unit)
            if h.guests:
                _sample(h, spec, model, rng, trial_rng, fraction, acc,
                        config.agent)
        acc.demand += sum(1 for t, v, lf, _d in trace
                          if v.workload == 'memory' and t <= now < t + lf)
    return acc.result()


class _Acc:
    """What the samples of one configuration add up to."""

    def __init__(self):
        self.rejected = {}
        self.demand = 0
        self.mem_perf = self.mem_clean = 0.0
        self.cpu = []
        self.mem = []

    def result(self):
        """The JSON-ready figures (see the module docstring)."""
        return {'rejected': self.rejected,
                'memory_perf': _ratio(self.mem_perf, self.demand),
                'memory_clean': _ratio(self.mem_clean, self.demand),
                'memory_geomean_accepted': round(
                    contention.geometric_mean(self.mem), 4),
                'memory_p10_accepted': _quantile(self.mem, 0.1),
                'cpu_geomean': round(contention.geometric_mean(self.cpu),
                                     4)}


def _quantile(values, q):
    if not values:
        return 1.0
    s = sorted(values)
    return round(s[min(len(s) - 1, int(math.floor(q * len(s))))], 4)


def _sample(host, spec, model, rng, trial_rng, fraction, acc, agent):
    guests = sorted(host.guests.values(), key=lambda g: g.vm.id)
    allowed = {g.vm.id: g.allowed for g in guests}
    if agent:
        _trial(host, guests, allowed, trial_rng, fraction)
    stats = contention.simulate_host(host.domains, [g.vm for g in guests],
                                     allowed, spec['slices'], rng, model)
    for g in guests:
        s = stats[g.vm.id]
        if g.vm.workload == 'memory':
            acc.mem_perf += s.performance
            acc.mem_clean += s.clean_slices / float(spec['slices'])
            acc.mem.append(s.performance)
        elif g.vm.workload == 'cpu':
            acc.cpu.append(s.performance)


def _trial(host, guests, allowed, rng, fraction):
    """At most one sampled guest in the other mode (the sampler's trial)."""
    sampled = [g for g in guests if g.auto]
    if not sampled or rng.random() >= min(1.0, len(sampled) * fraction):
        return
    g = rng.choice(sampled)
    everything = tuple(sorted(c for d in host.domains for c in d))
    if g.allowed[0] != everything:
        allowed[g.vm.id] = [everything] * g.vm.vcpus
        return
    vcpus, memory = host.loads()
    for d, cpus in enumerate(host.domains):
        if not memory[d] and len(cpus) >= g.vm.vcpus:
            allowed[g.vm.id] = [cpus] * g.vm.vcpus
            return


def run(scenario):
    """Every configuration of the scenario on one trace; JSON-ready."""
    spec = scenario['cloud']
    trace = make_trace(spec, random.Random(scenario['seed']))
    changes = trajectories(trace, spec, scenario['model'],
                           scenario['seed'] + 3)
    domains_total = spec['hosts'] * len(scenario['domains'])
    bound = upper_bound(trace, spec, domains_total,
                        scenario['model'].dirty_all)
    results = {}
    for name in scenario['configs']:
        r = run_config(cloud.CONFIGS[name], scenario, trace, changes)
        r['memory_perf_vs_bound'] = _ratio(r['memory_perf'],
                                           bound['memory_perf'])
        results[name] = r
    return {'kind': 'cloud', 'arrivals': len(trace),
            'upper_bound': bound, 'configs': results}
