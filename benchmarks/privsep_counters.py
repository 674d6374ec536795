"""What one counter read round costs through the privsep daemon (issue 32).

Usage, from the repository root, as root (the daemon is started as a root
agent starts it, ``python -m oslo_privsep.daemon``)::

    .venv/bin/python benchmarks/privsep_counters.py [--threads 200]
        [--rounds 300] [--out benchmarks/results/privsep_counters.json]

``--threads`` threads of a child process stand for the vCPU threads; each
is counted with three software events (task-clock, context switches,
cpu-clock: hardware events where the host has a PMU, three as the agent's
cycles, instructions and LLC misses). Per read round of every thread,
process CPU time (``/proc/<pid>/stat`` utime + stime over all the
rounds; the agent's side and the daemon's side apart; the least of three
runs) and wall time:

* **before**: the agent's path before issue 32, in the agent's process:
  one fd per event, one ``read`` each (600 reads for 200 threads);
* **direct**: this change's counter groups
  (:class:`~nova_cacheaware.privsep.perf.CounterGroups`) in the agent's
  process: one ``read`` per thread (``PERF_FORMAT_GROUP``);
* **privsep**: the same groups held by the privsep daemon, read by
  :func:`~nova_cacheaware.privsep.perf.read_groups`: one round trip.

With ``--tracepoints``, ``vcpu_sizing``'s ``kvm:kvm_exit`` groups instead
(all exits and the pause exits, filtered), in the agent's process as
before issue 32 (**direct**: :class:`~nova_cacheaware.privsep.tracepoint.
TracepointGroups`) and through the daemon (**privsep**). It needs tracefs
and kvm; where tracefs is not mounted, run it in a mount namespace of its
own (the daemon inherits it)::

    unshare --mount --propagation private sh -c 'mount -t tracefs nodev \
        /sys/kernel/tracing && .venv/bin/python \
        benchmarks/privsep_counters.py --tracepoints'
"""

import argparse
import json
import os
import subprocess
import sys
import time

from nova_cacheaware import privsep
from nova_cacheaware.privsep import perf
from nova_cacheaware.privsep import tracepoint

EVENTS = {'task_clock': (perf.PERF_TYPE_SOFTWARE, 1),
          'context_switches': (perf.PERF_TYPE_SOFTWARE, 3),
          'cpu_clock': (perf.PERF_TYPE_SOFTWARE, 0)}
KVM_EVENTS = {'exits': ('kvm:kvm_exit', None),
              'pause_exits': ('kvm:kvm_exit', ('exit_reason', 40))}

CHILD = '''
import sys, threading
n = int(sys.argv[1])
ready = []
stop = threading.Event()
def vcpu():
    ready.append(threading.get_native_id())
    stop.wait()
threads = [threading.Thread(target=vcpu) for _ in range(n)]
for t in threads:
    t.start()
while len(ready) < n:
    pass
print(' '.join(map(str, ready)), flush=True)
sys.stdin.read()
stop.set()
'''

TICK = os.sysconf('SC_CLK_TCK')


def cpu_seconds(pid):
    """utime + stime of process ``pid``, seconds."""
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rpartition(')')[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def measure(read, rounds, daemon=None, repeats=3):
    """Per round: agent CPU, daemon CPU (or 0) and wall, microseconds.

    The least CPU of ``repeats`` runs of ``rounds`` rounds (the machine
    is shared).
    """
    read()
    return min((_measure(read, rounds, daemon) for _ in range(repeats)),
               key=lambda m: m['cpu_us'])


def _measure(read, rounds, daemon):
    me = os.getpid()
    a0, d0 = cpu_seconds(me), daemon and cpu_seconds(daemon)
    w0 = time.perf_counter()
    for _ in range(rounds):
        read()
    wall = time.perf_counter() - w0
    agent = cpu_seconds(me) - a0
    other = cpu_seconds(daemon) - d0 if daemon else 0.0
    per = 1e6 / rounds
    return {'agent_cpu_us': round(agent * per, 1),
            'daemon_cpu_us': round(other * per, 1),
            'cpu_us': round((agent + other) * per, 1),
            'wall_us': round(wall * per, 1)}


def start_daemon(groups=perf):
    """Start the context's daemon (a call of ``groups``); its pid."""
    ctx = privsep.perfmon_pctxt
    commands = []
    helper_command = ctx.helper_command

    def recording(sockpath):
        commands.append(helper_command(sockpath))
        return commands[-1]

    ctx.helper_command = recording
    groups.read_groups([])
    sock = os.fsencode(commands[0][-1])
    for _ in range(100):
        pids = []
        for p in os.listdir('/proc'):
            try:
                with open('/proc/%s/cmdline' % p, 'rb') as f:
                    if sock in f.read().split(b'\0'):
                        pids.append(int(p))
            except OSError:
                pass
        if len(pids) == 1:
            return pids[0]
        time.sleep(0.05)
    raise RuntimeError('no privsep daemon found')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--threads', type=int, default=200)
    parser.add_argument('--rounds', type=int, default=300)
    parser.add_argument('--tracepoints', action='store_true',
                        help='kvm:kvm_exit groups, not counter groups')
    parser.add_argument('--out')
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit('run as root: it starts the privsep daemon')
    child = subprocess.Popen([sys.executable, '-c', CHILD,
                              str(args.threads)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    try:
        tids = [int(t) for t in child.stdout.readline().split()]
        result = (run_tracepoints if args.tracepoints else run)(tids,
                                                                args.rounds)
    finally:
        child.stdin.close()
        child.wait()
        privsep.perfmon_pctxt.stop()
    result.update(threads=args.threads, rounds=args.rounds,
                  events=sorted(KVM_EVENTS if args.tracepoints
                                else EVENTS),
                  machine=os.uname().machine,
                  kernel=os.uname().release, cpus=os.cpu_count(),
                  date=time.strftime('%Y-%m-%d'))
    text = json.dumps(result, indent=2, sort_keys=True)
    print(text)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text + '\n')


def run(tids, rounds):
    out = {}
    # before: one fd per event, one read each, in the agent.
    fds = [perf.perf_event_open(perf.make_attr(t, c), tid)
           for tid in tids for t, c in EVENTS.values()]
    try:
        out['before'] = measure(
            lambda: [perf.read_count(fd) for fd in fds], rounds)
    finally:
        for fd in fds:
            os.close(fd)
    # direct: the groups in the agent's process.
    groups = perf.CounterGroups()
    handles = [groups.open_group(tid, EVENTS)[0] for tid in tids]
    try:
        out['direct'] = measure(lambda: groups.read_groups(handles), rounds)
    finally:
        groups.close_all()
    # privsep: the same groups in the daemon, one round trip.
    daemon = start_daemon()
    handles = [perf.open_group(tid, EVENTS)[0] for tid in tids]
    out['privsep'] = measure(lambda: perf.read_groups(handles), rounds,
                             daemon=daemon)
    perf.close_groups(handles)
    for name in ('before', 'direct'):
        out['privsep_over_%s_cpu' % name] = round(
            out['privsep']['cpu_us'] / out[name]['cpu_us'], 2)
    return out


def run_tracepoints(tids, rounds):
    """``vcpu_sizing``'s tracepoint groups: in-process, then the daemon."""
    out = {}
    groups = tracepoint.TracepointGroups()
    handles = [groups.open_group(tid, KVM_EVENTS)[0] for tid in tids]
    try:
        out['direct'] = measure(lambda: groups.read_groups(handles), rounds)
    finally:
        groups.close_all()
    daemon = start_daemon(tracepoint)
    handles = [tracepoint.open_group(tid, KVM_EVENTS)[0] for tid in tids]
    out['privsep'] = measure(lambda: tracepoint.read_groups(handles),
                             rounds, daemon=daemon)
    tracepoint.close_groups(handles)
    out['privsep_over_direct_cpu'] = round(
        out['privsep']['cpu_us'] / out['direct']['cpu_us'], 2)
    return out


if __name__ == '__main__':
    main()
