"""The agent's cost over real time: its daemon, every thread, real periods.

``agent_steady_state.py`` times passes back to back on a simulated clock;
this runs what ``nova-cacheaware-agent`` runs in production - the daemon
of :func:`nova_cacheaware.cmd.agent.run_daemon`: the reconcile loop at
``[agent] period_s`` (10 s), the libvirt event thread, the metrics
exporter, the describe RPC server, oslo.messaging's threads - for
``--periods`` real periods, and reads the process's CPU time
(``time.process_time``: every thread) and RSS over them. The agent is
the same as the ``host`` (and ``domain``) row of ``agent_steady_state.py``:
``--domains`` instances on libvirt's ``test:///default``, counters,
``vcpu_sizing,balloon,numa_balance``, the Nova spec source, Placement on
MariaDB and notifications on RabbitMQ; here also the metrics exporter,
scraped every 15 s as Prometheus would (the scraper's own CPU is
subtracted), and the describe RPC server.

Named baseline in the same worker, after the agent stopped: a bare
libvirt read of the same facts (list + persistent XML + ``vcpuPinInfo``
per domain) once per period, its CPU per read.

Usage: python benchmarks/agent_real_time.py [--domains 200] [--periods 30]
       [--rows host] [--json FILE]
"""

import argparse
import os
import resource
import statistics
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks import agent_steady_state as steady  # noqa: E402

RESULTS = os.path.join('benchmarks', 'results', 'agent_real_time.json')
#: Seconds to wait for the daemon's first pass before measuring.
FIRST_PASS_TIMEOUT_S = 120.0
#: How often the benchmark scrapes the agent's metrics, as Prometheus does.
SCRAPE_S = 15.0


class Scraper(threading.Thread):
    """Scrapes ``url`` every :data:`SCRAPE_S`; counts its own CPU apart.

    The exporter's work for a scrape is the agent's (counted); the HTTP
    client's is Prometheus's (subtracted: ``cpu_s``).
    """

    def __init__(self, url):
        super().__init__(daemon=True)
        self.url = url
        self.cpu_s = 0.0
        self.scrapes = 0
        self.failures = 0
        self.done = threading.Event()

    def run(self):
        """Scrape until :attr:`done` is set."""
        import urllib.request
        while not self.done.wait(SCRAPE_S):
            start = time.thread_time()
            try:
                with urllib.request.urlopen(self.url, timeout=5) as reply:
                    reply.read()
                self.scrapes += 1
            except OSError:
                self.failures += 1
            self.cpu_s += time.thread_time() - start


def run_worker(spec):
    """One agent daemon for ``spec['periods']`` real periods; its figures."""
    import libvirt
    from oslo_log import log as oslo_logging

    from nova_cacheaware.cachedomain import repinning
    from nova_cacheaware.cmd import agent as agent_cmd

    libvirt.registerErrorHandler(lambda ctx, err: None, None)
    conf = agent_cmd.make_conf(['--config-file', spec['conf']])
    oslo_logging.setup(conf, 'nova-cacheaware-agent')
    conn = libvirt.open(spec['uri'])
    rss_start = steady.rss_mib()
    doms = [steady.define(conn, inst, spec['kind'], spec['cpuset'])
            for inst in spec['instances']]
    agent = agent_cmd.build_agent(
        conf, planner=repinning.Planner(conf.agent.plan_objective))
    daemon = threading.Thread(target=agent_cmd.run_daemon,
                              args=(conf, agent), daemon=True)
    daemon.start()
    deadline = time.monotonic() + FIRST_PASS_TIMEOUT_S
    while agent.last_pass_at is None and time.monotonic() < deadline:
        time.sleep(0.2)
    if agent.last_pass_at is None:
        raise RuntimeError('the agent made no pass in %.0f s'
                           % FIRST_PASS_TIMEOUT_S)
    # One period for the first pass's repins and Placement writes to
    # settle: the steady state is what runs for months.
    time.sleep(conf.agent.period_s)
    period = conf.agent.period_s
    scraper = Scraper('http://%s/metrics' % conf.agent.metrics_listen)
    threads = threading.active_count()
    rss = []
    cpu0, wall0 = time.process_time(), time.monotonic()
    scraper.start()
    for _ in range(spec['periods']):
        time.sleep(period)
        rss.append(steady.rss_mib())
    scraper.done.set()
    scraper.join()
    cpu = time.process_time() - cpu0 - scraper.cpu_s
    wall = time.monotonic() - wall0
    agent.stop()
    daemon.join(60)
    base = []
    for _ in range(spec['periods']):
        base.append(steady.bare_read(conn))
    per_period = cpu / (wall / period)
    out = {
        'uri': spec['uri'], 'domains': len(doms), 'period_s': period,
        'periods': spec['periods'], 'wall_s': round(wall, 1),
        'cpu_s': round(cpu, 3),
        'cores_mean': round(cpu / wall, 5),
        'cpu_pct_one_core': round(cpu / wall * 100, 3),
        'cpu_ms_per_period_mean': steady.ms(per_period),
        'threads_while_running': threads,
        'metrics_scrapes': scraper.scrapes,
        'metrics_scrape_failures': scraper.failures,
        'scraper_cpu_s_subtracted': round(scraper.cpu_s, 3),
        'baseline_bare_read_cpu_ms': steady.ms(statistics.median(base)),
        'ratio_to_bare_read': round(per_period / statistics.median(base), 2),
        'rss_mib_before_defining_domains': round(rss_start, 1),
        'rss_mib_mean': round(statistics.mean(rss), 1),
        'rss_mib_max': round(max(rss), 1),
        'max_rss_mib': round(resource.getrusage(
            resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        'passes': {result: agent.metrics.passes.labels(result)._value.get()
                   for result in ('ok', 'failed')},
        'notifications_sent': getattr(agent.publisher, 'sent', None),
        'notifications_failed': getattr(agent.publisher, 'failed', None),
    }
    for dom in doms:
        if spec['kind'] != 'test':
            dom.destroy()
            dom.undefine()
    return out


def run_row(services, tmp, row, n, periods, tree):
    """Set up Placement and Nova's records for ``row``; run its worker."""
    from tests.fixtures import prometheus
    spec, cleanup = steady.prepare_row(services, tmp, row, n,
                                       sysfs_root=tree)
    spec['periods'] = periods
    # Everything on: the metrics exporter (scraped) and the describe RPC
    # server beside the notifications.
    with open(spec['conf'], 'a') as f:
        f.write('[agent]\nmetrics_listen = 127.0.0.1:%d\n'
                '[cacheaware_status]\nagent_rpc = true\n'
                % prometheus.free_port())
    try:
        return steady.run_worker_process(
            __file__, tmp, row, spec,
            timeout=FIRST_PASS_TIMEOUT_S + (periods + 3) * steady.PERIOD_S
            + 300)
    finally:
        cleanup()


def main(argv=None):
    """Run the rows (or, with ``--worker``, one worker) and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--domains', type=int, default=200)
    parser.add_argument('--periods', type=int, default=30)
    parser.add_argument('--rows', default='host')
    parser.add_argument('--json', metavar='FILE', default=RESULTS,
                        help='results file ("-": stdout only)')
    parser.add_argument('--worker', metavar='SPEC', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return steady.worker_main(args.worker, run_worker)
    from benchmarks import common
    load_before = os.getloadavg()
    started = time.time()
    rows = {}
    with steady.bench_services('agent-real-') as (services, tmp, tree):
        for row in [r for r in args.rows.split(',') if r]:
            rows[row] = run_row(services, tmp, row, args.domains,
                                args.periods, tree)
            print('%s: %.3f %% of a core, %.1f MiB' % (
                row, rows[row]['cpu_pct_one_core'], rows[row]['rss_mib_max']),
                file=sys.stderr)
    doc = {'benchmark': 'agent_real_time',
           'command': 'python benchmarks/agent_real_time.py %s'
                      % ' '.join(argv if argv is not None else sys.argv[1:]),
           'machine': common.machine(), 'date': common.now(),
           'load_average_before': [round(x, 2) for x in load_before],
           'load_average_after': [round(x, 2) for x in os.getloadavg()],
           'wall_s': round(time.time() - started, 1),
           'domains': args.domains, 'periods': args.periods, 'rows': rows}
    return steady.report(args.json, doc)


if __name__ == '__main__':
    sys.exit(main())
