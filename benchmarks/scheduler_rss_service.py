#!/usr/bin/env python3
"""RSS of a real, idle ``nova-scheduler`` with and without our plugins.

Starts the venv's ``nova-scheduler`` (one process: ``[scheduler]
workers = 1``) on SQLite API and cell databases made by ``nova-manage`` in
a temporary directory, and oslo.messaging's in-process ``fake://``
transport: a second scheduler on the machine's RabbitMQ would take RPC
requests meant for another cloud's scheduler. Everything nova-scheduler
loads and builds at start-up (service, manager, HostManager with its
filters and weighers, the cell cache) is real; the AMQP driver's own
memory is the same with or without plugins. ``plugins`` enables
``CacheDomainFilter``, ``FullNUMAFilter`` and both weighers in
``nova.conf``. oslo.service forks one worker process even with one
worker: VmRSS of the master and of the worker are read once they have
stayed the same for ``--settle`` seconds (idle), then both are stopped.

Prints one JSON document and writes it to ``--output`` when given.
"""

import argparse
import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

#: The venv's console scripts may name another interpreter in their
#: shebang: run their entry points with this one.
ENTRY = ('import sys; from nova.cmd.{0} import main; '
         'sys.argv[0] = "{1}"; main()')

CONF = """[DEFAULT]
transport_url = fake://
state_path = {tmp}
log_file = {tmp}/scheduler-{variant}.log
[api_database]
connection = sqlite:///{tmp}/nova_api.sqlite
[database]
connection = sqlite:///{tmp}/nova.sqlite
[scheduler]
workers = 1
[placement]
# Nothing listens there: the scheduler asks Placement only per request.
auth_type = none
endpoint_override = http://127.0.0.1:9/placement
[filter_scheduler]
{plugins}
[cacheaware_scheduler]
listen_for_host_state = true
"""

PLUGINS = """available_filters = nova.scheduler.filters.all_filters
available_filters = nova_cacheaware.scheduler.filters.all_filters
enabled_filters = ComputeFilter,ImagePropertiesFilter,\
ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter,NUMATopologyFilter,\
CacheDomainFilter,FullNUMAFilter
weight_classes = nova.scheduler.weights.all_weighers,\
nova_cacheaware.scheduler.weights.all_weighers
"""


def write_conf(tmp, variant):
    path = os.path.join(tmp, '%s.conf' % variant)
    with open(path, 'w') as f:
        f.write(CONF.format(tmp=tmp, variant=variant,
                            plugins=PLUGINS if variant == 'plugins' else ''))
    return path


def manage(conf, *args):
    subprocess.run([sys.executable, '-c',
                    ENTRY.format('manage', 'nova-manage'),
                    '--config-file', conf] + list(args),
                   check=True, capture_output=True)


def rss_mib(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS'):
                return int(line.split()[1]) / 1024
    raise RuntimeError('no VmRSS for %d' % pid)


def children(pid):
    """Pids whose parent is ``pid`` (forked from any of its threads)."""
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/stat' % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(')', 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def tree_rss(pid):
    """``(master MiB, [worker MiB...])`` of a nova-scheduler.

    oslo.service forks one worker even with ``workers = 1``; the worker
    runs the scheduler.
    """
    children_ = children(pid)
    return (round(rss_mib(pid), 1),
            [round(rss_mib(c), 1) for c in children_])


def idle_rss(conf, settle, limit):
    proc = subprocess.Popen(
        [sys.executable, '-c', ENTRY.format('scheduler', 'nova-scheduler'),
         '--config-file', conf],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        start = time.monotonic()
        last, since = None, time.monotonic()
        while time.monotonic() - start < limit:
            time.sleep(1)
            if proc.poll() is not None:
                raise RuntimeError('nova-scheduler exited with %s'
                                   % proc.returncode)
            try:
                now = tree_rss(proc.pid)
            except (OSError, ValueError, RuntimeError):
                continue                   # a worker starting or leaving
            if now != last or not now[1]:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= settle:
                return now, round(time.monotonic() - start, 1)
        return last, round(time.monotonic() - start, 1)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--settle', type=float, default=10)
    parser.add_argument('--limit', type=float, default=120)
    parser.add_argument('--repeats', type=int, default=2)
    parser.add_argument('--output')
    args = parser.parse_args()
    load_before = os.getloadavg()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = write_conf(tmp, 'nova')
        manage(base, 'api_db', 'sync')
        manage(base, 'cell_v2', 'map_cell0', '--database_connection',
               'sqlite:///%s/nova_cell0.sqlite' % tmp)
        manage(base, 'cell_v2', 'create_cell', '--name', 'cell1')
        manage(base, 'db', 'sync')
        for variant in ('nova', 'plugins'):
            conf = write_conf(tmp, variant)
            runs = [idle_rss(conf, args.settle, args.limit)
                    for _ in range(args.repeats)]
            with open(os.path.join(tmp, 'scheduler-%s.log' % variant)) as f:
                log = f.read()
            results[variant] = {
                'vmrss_mib_runs': [{'master': r[0][0], 'workers': r[0][1]}
                                   for r in runs],
                'seconds_to_idle': [r[1] for r in runs],
                # HostManager refuses to start with an enabled filter it
                # cannot load: running at all means the plugins loaded.
                'log_errors': log.count(' ERROR ')}
    low = {v: min(sum(run['workers']) for run in r['vmrss_mib_runs'])
           for v, r in results.items()}
    doc = {
        'benchmark': 'scheduler_rss_service',
        'command': ' '.join(['.venv/bin/python',
                             'benchmarks/scheduler_rss_service.py']
                            + [shlex.quote(a) for a in sys.argv[1:]]),
        'date': datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec='seconds'),
        'machine': {'nproc': os.cpu_count()},
        'loadavg_before': [round(x, 2) for x in load_before],
        'results': results,
        # The scheduler worker (the process that filters and weighs).
        'extra_worker_mib_with_plugins': round(
            low['plugins'] - low['nova'], 1),
    }
    text = json.dumps(doc, indent=2)
    print(text)
    if args.output:
        with open(args.output, 'w') as f:
            f.write(text + '\n')


if __name__ == '__main__':
    main()
