#!/usr/bin/env python3
"""What the Prometheus metrics add to the scheduler's and the agent's paths.

* ``inc_ns``: one increment of a label-bound counter (what the filter does
  per request and per refused host);
* ``filter``: ``CacheDomainFilter.filter_all`` over ``--hosts`` hosts, with
  the metrics and with every metrics call replaced by a no-op, alternated
  ``--repeat`` times (the median of each). ``refuse_all``: an All-share
  request every host refuses (the worst case: one increment per host);
  ``plain``: a request without ``cacheaware:`` keys (one increment per
  request);
* ``scrape_ms``: one scrape of the scheduler registry with ``--hosts``
  hosts in the live-state cache (the freshness gauges and the age
  histogram are computed then);
* ``agent_pass_us``: :meth:`AgentMetrics.observe_pass` for a pass of
  ``--vms`` servers on 16 domains.

Prints one JSON document (doc/source/admin/metrics.rst quotes it).
"""

import argparse
import datetime
import json
import statistics
import sys
import time
import timeit
import types

from nova import objects
from nova.scheduler import host_manager
import os_resource_classes as orc

from nova_cacheaware.agent import actuator
from nova_cacheaware.agent import metrics as agent_metrics
from nova_cacheaware.cachedomain import model
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware import conf as ca_conf
from nova_cacheaware.scheduler import filters
from nova_cacheaware.scheduler import host_state as hs
from nova_cacheaware.scheduler import live_state
from nova_cacheaware.scheduler import metrics
from nova_cacheaware.scheduler import state_cache

objects.register_all()


def spec(extra_specs):
    """A RequestSpec of a 4-vCPU flavor with ``extra_specs``."""
    flavor = objects.Flavor(flavorid='f1', vcpus=4, memory_mb=4096,
                            root_gb=1, ephemeral_gb=0, swap=0,
                            extra_specs=extra_specs)
    return objects.RequestSpec(flavor=flavor, num_instances=1)


def hosts(n):
    """Hosts whose one candidate has no cache group (All-share refused)."""
    out = []
    for i in range(n):
        state = host_manager.HostState('h%d' % i, 'h%d' % i, 'cell1')
        state.allocation_candidates = [{'allocations': {'rp%d' % i: {
            'resources': {orc.VCPU: 4}}}, 'mappings': {'': ['rp%d' % i]}}]
        out.append(state)
    return out


class NoMetrics:
    """Replace every metrics call of the filter by a no-op (the baseline)."""

    def __enter__(self):
        self.saved = (metrics.refused, metrics.REQUESTS)
        metrics.refused = lambda reason: None
        metrics.REQUESTS = types.SimpleNamespace(inc=lambda: None)
        return self

    def __exit__(self, *exc):
        metrics.refused, metrics.REQUESTS = self.saved


def time_filter(hosts_, request, repeat):
    """Median seconds of filter_all with and without metrics."""
    filt = filters.CacheDomainFilter()
    saved = [h.allocation_candidates for h in hosts_]
    timed = {'with': [], 'without': []}
    for _ in range(repeat):
        for mode in ('with', 'without'):
            for h, c in zip(hosts_, saved):
                h.allocation_candidates = c
            start = time.perf_counter()
            if mode == 'with':
                list(filt.filter_all(hosts_, request))
            else:
                with NoMetrics():
                    list(filt.filter_all(hosts_, request))
            timed[mode].append(time.perf_counter() - start)
    with_s = statistics.median(timed['with'])
    without_s = statistics.median(timed['without'])
    return {'with_ms': round(with_s * 1e3, 2),
            'without_ms': round(without_s * 1e3, 2),
            'added_ns_per_host': round((with_s - without_s) / len(hosts_)
                                       * 1e9, 1),
            'added_percent': round((with_s - without_s) / without_s * 100,
                                   2)}


def scrape_ms(n):
    """One scrape of the scheduler registry with ``n`` hosts cached."""
    import prometheus_client
    cache = state_cache.HostStateCache(ttl=60)
    now = datetime.datetime.now(datetime.timezone.utc)
    for i in range(n):
        cache.update(hs.HostCacheState(host='h%d' % i, timestamp=now,
                                       agent_healthy=True))
    registry = prometheus_client.CollectorRegistry()
    registry.register(metrics.LiveStateCollector(lambda: cache))
    runs = [timeit.timeit(lambda: prometheus_client.generate_latest(
        registry), number=1) for _ in range(5)]
    return round(statistics.median(runs) * 1e3, 2)


def agent_pass_us(vms):
    """observe_pass for a pass of ``vms`` servers on 16 domains."""
    m = agent_metrics.AgentMetrics()
    one = types.SimpleNamespace(
        decisions=[repinning.Decision(
            uuid='vm%d' % i, name='', workload='memory', movable=True,
            reason='', action=repinning.KEEP, current={}, desired={},
            allowed={}, share='all' if i % 2 else 'partial')
            for i in range(vms)],
        plan_output=model.Plan(vms={}, unplaced=(), domains={
            'd%d' % i: model.DomainPlan('clean', ()) for i in range(16)}),
        result=actuator.ApplyResult(), capabilities={})
    runs = timeit.repeat(lambda: m.observe_pass(one, 0.1), number=100,
                         repeat=5)
    return round(min(runs) / 100 * 1e6, 1)


def main(argv=None):
    """Run the measurements and print them as JSON."""
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--hosts', type=int, default=10000)
    p.add_argument('--vms', type=int, default=200)
    p.add_argument('--repeat', type=int, default=15)
    args = p.parse_args(argv)
    ca_conf.CONF([], project='nova-cacheaware-bench')
    ca_conf.CONF.set_override('listen_for_host_state', False,
                              group='cacheaware_scheduler')
    live_state.reset()
    child = metrics.REFUSED['no_one_domain_candidate']
    inc_ns = min(timeit.repeat(child.inc, number=100000, repeat=5)) / 1e5
    hosts_ = hosts(args.hosts)
    doc = {
        'hosts': args.hosts,
        'inc_ns': round(inc_ns * 1e9, 1),
        'filter': {
            'refuse_all': time_filter(hosts_, spec(
                {'cacheaware:cache_share': 'all'}), args.repeat),
            'plain': time_filter(hosts_, spec({}), args.repeat),
        },
        'scrape_ms': scrape_ms(args.hosts),
        'agent_pass_us': agent_pass_us(args.vms),
        'python': sys.version.split()[0],
    }
    print(json.dumps(doc, indent=2, sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main())
