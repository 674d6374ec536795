"""Measure the guest helper's hit-ratio error against a known true ratio.

Runs the real helper (``deploy/guest-tools/cacheaware-guest-stats``) on this
machine's kernel while a reader process reads a set of files whole, once,
after a known share of them was dropped from the page cache
(``posix_fadvise(DONTNEED)``): the true hit ratio by bytes is ``1 - share``.
Also runs the helper with no reader, which gives the background ``rchar``
of everything else (pipes, sockets, ``/proc``: counted as hits), and a
reader of 64 KiB at random offsets in dropped files (readahead fetches
more than is read).  Writes JSON (figures, command, machine, load, date).

    python benchmarks/balloon_estimator_error.py [--json-out FILE]

About 40 s; needs a disk-backed directory (``--dir``, default the
system's temporary directory) where ``read_bytes`` is accounted.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HELPER = os.path.join(HERE, '..', 'deploy', 'guest-tools',
                      'cacheaware-guest-stats')
FILES, FILE_MIB = 32, 4

READER = r'''
import os, random, sys, time
paths, mode = sys.argv[2:], sys.argv[1]


def io():
    with open('/proc/self/io') as f:
        d = dict(line.split(': ') for line in f.read().splitlines())
    return int(d['rchar']), int(d['read_bytes'])


time.sleep(1)
r0, b0 = io()
n = 0
if mode == 'whole':
    for p in paths:
        with open(p, 'rb') as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                n += len(b)
else:
    rng = random.Random(0)
    for _ in range(256):
        p = rng.choice(paths)
        with open(p, 'rb') as f:
            f.seek(rng.randrange(0, os.path.getsize(p) - 65536) & ~4095)
            n += len(f.read(65536))
r1, b1 = io()
print(n, r1 - r0, b1 - b0, flush=True)
time.sleep(30)
'''


def drop(paths):
    """Drop ``paths`` from the page cache."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def cache(paths):
    """Read ``paths`` so that they are cached."""
    for p in paths:
        with open(p, 'rb') as f:
            while f.read(1 << 20):
                pass


def helper(interval, reader_args=None):
    """One helper report, with a reader running during it (or none)."""
    reader = None
    if reader_args:
        reader = subprocess.Popen([sys.executable, '-c', READER]
                                  + reader_args, stdout=subprocess.PIPE,
                                  text=True)
    try:
        out = subprocess.run(['sh', HELPER, str(interval)], check=True,
                             capture_output=True, text=True, timeout=60)
        doc = json.loads(out.stdout)
        n, rchar, fetched = (map(int, reader.stdout.readline().split())
                             if reader else (0, 0, 0))
        doc.update(reader_bytes=n, reader_rchar=rchar,
                   reader_read_bytes=fetched)
    finally:
        if reader:
            reader.kill()
            reader.wait()
    return doc


def estimate(doc):
    """The host's ratio from a report (guest_report's formula)."""
    if doc['read_kib'] <= 0:
        return None
    return 1 - min(doc['fetched_kib'], doc['read_kib']) / doc['read_kib']


def reader_estimate(doc):
    """The same formula on the reader's own counters (no background)."""
    if doc['reader_rchar'] <= 0:
        return None
    return 1 - min(doc['reader_read_bytes'],
                   doc['reader_rchar']) / doc['reader_rchar']


def _cpu_model():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def _round(x):
    return None if x is None else round(x, 3)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--dir', default=tempfile.gettempdir())
    parser.add_argument('--interval', type=int, default=4)
    parser.add_argument('--json-out')
    args = parser.parse_args(argv)
    load0 = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        paths = [os.path.join(tmp, 'f%02d' % i) for i in range(FILES)]
        for p in paths:
            with open(p, 'wb') as f:
                f.write(os.urandom(FILE_MIB << 20))
        os.sync()
        idle = helper(args.interval)
        rows.append({'case': 'idle', 'true': None, 'report': idle,
                     'estimate': estimate(idle), 'reader_estimate': None})
        for share in (0.0, 0.25, 0.5, 0.75, 1.0):
            cache(paths)
            drop(paths[:int(round(share * FILES))])
            doc = helper(args.interval, ['whole'] + paths)
            rows.append({'case': 'whole files, %d %% dropped'
                         % (share * 100), 'true': 1 - share,
                         'report': doc, 'estimate': estimate(doc),
                         'reader_estimate': reader_estimate(doc)})
        drop(paths)
        doc = helper(args.interval, ['random64k'] + paths)
        rows.append({'case': 'random 64 KiB reads, all dropped',
                     'true': None, 'report': doc, 'estimate': estimate(doc),
                     'reader_estimate': reader_estimate(doc)})
    for r in rows:
        rep = r['report']
        print('%-34s true %-5s helper %-6s reader-only %-6s read %7d KiB '
              'fetched %7d KiB reader rchar %7d read_bytes %7d KiB' % (
                  r['case'], r['true'], _round(r['estimate']),
                  _round(r['reader_estimate']), rep['read_kib'],
                  rep['fetched_kib'], rep['reader_rchar'] // 1024,
                  rep['reader_read_bytes'] // 1024))
    doc = {'command': 'python benchmarks/balloon_estimator_error.py '
                      + ' '.join(argv if argv is not None else sys.argv[1:]),
           'machine': '%s, %d CPUs, kernel %s, Python %s' % (
               _cpu_model(), os.cpu_count(), platform.release(),
               platform.python_version()),
           'load': {'start': load0, 'end': os.getloadavg()},
           'date': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
           'interval_s': args.interval, 'file_mib': FILE_MIB,
           'files': FILES, 'rows': rows}
    if args.json_out:
        with open(args.json_out, 'w') as f:
            json.dump(doc, f, indent=1)
            f.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
