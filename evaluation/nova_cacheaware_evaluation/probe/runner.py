"""Run the probe's kernels in pinned processes and collect their samples.

A measurement is one run of the measured kernel on the measured CPU; for a
co-run, a second copy (same kernel, same working set) is started first on
the co-runner's CPU, runs until the measured one has finished, and is then
killed; its CPU share (CPU time over wall time of the samples it finished)
is kept with the run. Both are pinned before they run a single instruction
of the kernel: ``os.sched_setaffinity(0, {cpu})`` in the child between fork
and exec; the parent reads the affinity back with
``os.sched_getaffinity(pid)``.

Kernels (``impl``): ``c``, ``kernel.c`` compiled on the fly with the host's
``cc`` (``-O2``), or ``numpy`` (:mod:`.kernel_numpy`). ``auto`` takes ``c``
when a compiler is found and the build works, otherwise ``numpy``.
"""

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import typing as ty

from nova_cacheaware import exception

KERNEL_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             'kernel.c')
IMPLS = ('auto', 'c', 'numpy')
#: How long a kernel may take to set up (allocate, shuffle, warm up).
READY_TIMEOUT = 120.0


class ProbeError(exception.CacheAwareError):
    """The probe could not run a kernel."""

    msg_fmt = '%(reason)s'


@dataclasses.dataclass(frozen=True)
class Kernel:
    """How to start a kernel: the command prefix and what it is."""

    impl: str
    argv: ty.Tuple[str, ...]
    description: str


def _compile(workdir):
    """Compile ``kernel.c``; the binary's path, or the reason it failed."""
    cc = shutil.which('cc') or shutil.which('gcc') or shutil.which('clang')
    if cc is None:
        return None, 'no C compiler (cc, gcc, clang) on PATH'
    if not os.path.exists(KERNEL_SOURCE):
        return None, 'kernel.c is not installed'
    binary = os.path.join(workdir, 'probe-kernel')
    proc = subprocess.run([cc, '-O2', '-o', binary, KERNEL_SOURCE],
                          capture_output=True, text=True)
    if proc.returncode:
        return None, '%s failed: %s' % (cc, ' '.join(proc.stderr.split())[
            :200])
    version = subprocess.run([cc, '--version'], capture_output=True,
                             text=True).stdout.splitlines()
    return binary, '%s -O2 (%s)' % (os.path.basename(cc),
                                    version[0] if version else '?')


def _numpy_kernel():
    try:
        import numpy  # noqa: F401 -- only to see that it is there
    except ImportError:
        return None
    return Kernel(impl='numpy',
                  argv=(sys.executable, '-m',
                        'nova_cacheaware_evaluation.probe.kernel_numpy'),
                  description='numpy %s (gather chain, sum)'
                              % numpy.__version__)


def prepare_kernel(impl, workdir):
    """The :class:`Kernel` for ``impl`` (``auto``, ``c`` or ``numpy``).

    Raises :class:`ProbeError` when the requested one cannot run here.
    """
    why = None
    if impl in ('auto', 'c'):
        binary, why = _compile(workdir)
        if binary:
            return Kernel(impl='c', argv=(binary,),
                          description='C kernel, ' + why)
        if impl == 'c':
            raise ProbeError(reason='cannot build the C kernel: %s' % why)
    kernel = _numpy_kernel()
    if kernel is None:
        raise ProbeError(reason='no kernel can run: %snumpy is not '
                                'installed' % ('%s and ' % why if why else ''))
    return kernel


@dataclasses.dataclass(frozen=True)
class Run:
    """The measured process's samples: ``(ns per line, cpu share)`` each.

    The CPU share of a sample is its CPU time over its wall time: how much
    of the sample the kernel really ran (the rest, other processes ran on
    its CPU, and may have evicted its cache).
    """

    samples: ty.Tuple[ty.Tuple[float, float], ...]
    #: The co-runner's CPU share over its samples (None: alone, or it
    #: finished none).
    co_cpu_share: ty.Optional[float] = None

    def shares(self):
        """``(ns, share)`` per sample.

        The share of a co-run sample is the smaller of the measured
        kernel's and the co-runner's: while the co-runner does not run,
        the co-run measures nothing.
        """
        if self.co_cpu_share is None:
            return self.samples
        return tuple((ns, min(share, self.co_cpu_share))
                     for ns, share in self.samples)


def _start(kernel, name, nbytes, samples, seconds, seed, cpu):
    env = dict(os.environ)
    # The numpy worker imports this package the way this process did.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    env['PYTHONPATH'] = os.pathsep.join(
        [package_root] + [p for p in [env.get('PYTHONPATH')] if p])
    proc = subprocess.Popen(
        list(kernel.argv) + [name, str(nbytes), str(samples),
                             '%.3f' % seconds, str(seed)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    try:
        pinned = os.sched_getaffinity(proc.pid)
    except OSError:
        pinned = {cpu}  # already exited: its output will say why
    if pinned != {cpu}:
        _stop(proc)
        raise ProbeError(reason='kernel pinned to CPUs %s, not CPU %d'
                                % (sorted(pinned), cpu))
    return proc


def _readline(proc, name, what):
    line = proc.stdout.readline()
    if not line:
        err = ' '.join(proc.stderr.read().split())[:200]
        proc.wait()
        raise ProbeError(reason='the %s kernel exited with %s before %s%s'
                                % (name, proc.returncode, what,
                                   ': ' + err if err else ''))
    return line


def _stop(proc, close=True):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if close:
        for stream in (proc.stdout, proc.stderr):
            if stream and not stream.closed:
                stream.close()


def measure(kernel, name, nbytes, cpu, co_cpu, samples, seconds, seed):
    """One run of kernel ``name`` on ``cpu``, with a copy on ``co_cpu``.

    ``co_cpu`` None: alone. Returns a :class:`Run`; every process started
    here has ended when it returns or raises.
    """
    procs = []
    try:
        if co_cpu is not None:
            co = _start(kernel, name, nbytes, 0, seconds, seed + 1, co_cpu)
            procs.append(co)
            _readline(co, name, 'it was ready')
        proc = _start(kernel, name, nbytes, samples, seconds, seed, cpu)
        procs.append(proc)
        _readline(proc, name, 'it was ready')
        values = []
        for _ in range(samples):
            ns, cpu_time, wall = map(
                float, _readline(proc, name, 'its samples').split())
            values.append((ns, cpu_time / wall if wall > 0 else 0.0))
        if co_cpu is None:
            return Run(samples=tuple(values))
        if procs[0].poll() is not None:
            raise ProbeError(reason='the co-runner on CPU %d ended early'
                                    % co_cpu)
        _stop(procs[0], close=False)
        return Run(samples=tuple(values),
                   co_cpu_share=_share(procs[0].stdout.read()))
    finally:
        for p in reversed(procs):
            _stop(p)


def _share(output):
    """CPU share over the sample lines of a co-runner's output."""
    cpu = wall = 0.0
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 3:
            cpu += float(fields[1])
            wall += float(fields[2])
    return cpu / wall if wall > 0 else None


def run_probe(kernel, cpus, kernels, sizes, repetitions, samples, seconds,
              seed=1, progress=None):
    """Every measurement of a probe, repetitions interleaved.

    ``cpus``: a :class:`~nova_cacheaware_evaluation.probe.analysis.ProbeCpus`;
    ``sizes``: ``((factor, bytes), ...)``. Returns ``(samples, runs)``:
    ``{(kernel, factor, placement): [(ns per line, cpu share), ...]}``
    (:meth:`Run.shares`) for the pure matrix, and one dict per run for the
    JSON. Each repetition goes through every kernel, size and placement
    once, so that a change of load hits all of them alike.
    """
    collected, runs = {}, []
    for rep in range(repetitions):
        for name in kernels:
            for factor, nbytes in sizes:
                for placement in cpus.placements():
                    started = time.monotonic()
                    run = measure(kernel, name, nbytes, cpus.alone,
                                  cpus.co_cpu(placement), samples, seconds,
                                  seed + rep)
                    collected.setdefault((name, factor, placement),
                                         []).extend(run.shares())
                    runs.append({
                        'repetition': rep, 'kernel': name,
                        'factor': factor, 'bytes': nbytes,
                        'placement': placement, 'cpu': cpus.alone,
                        'co_cpu': cpus.co_cpu(placement),
                        'ns_per_line': [round(v, 4)
                                        for v, _ in run.samples],
                        'cpu_share': [round(share, 3)
                                      for _, share in run.samples],
                        'co_cpu_share': (None if run.co_cpu_share is None
                                         else round(run.co_cpu_share, 3)),
                        'seconds': round(time.monotonic() - started, 2)})
                    if progress:
                        progress(runs[-1])
    return collected, runs


def workdir():
    """A private temporary directory for the compiled kernel."""
    return tempfile.TemporaryDirectory(prefix='nova-cacheaware-probe-')
