"""The probe's numpy kernels (used where no C compiler is present).

Run as ``python -m nova_cacheaware_evaluation.probe.kernel_numpy
chase|stream BYTES SAMPLES SECONDS SEED``; same protocol as ``kernel.c``
(see there).

``chase``: a gather chain ``x = nxt[x]`` over :data:`LANES` independent
pointers walking one random cycle through every 64-byte line; each step
depends on the previous one, the lanes overlap their misses (numpy has no
single dependent load without a Python loop per step, which would measure
the interpreter). ``stream``: ``a.sum()`` over every word.
"""

import mmap
import sys
import time

#: Pointers chased at once: enough that numpy's per-call cost (about a
#: microsecond) is small next to the misses of one step.
LANES = 4096
WORDS_PER_LINE = 8
HUGE_PAGE = 2 << 20


def _array(numpy, words):
    """A zeroed int64 array on anonymous memory advised to huge pages.

    Like ``kernel.c``: transparent huge pages where the kernel allows them
    (madvise mode), so that TLB misses do not hide the cache.
    """
    size = -(-words * 8 // HUGE_PAGE) * HUGE_PAGE
    buf = mmap.mmap(-1, size)
    if hasattr(mmap, 'MADV_HUGEPAGE'):
        try:
            buf.madvise(mmap.MADV_HUGEPAGE)
        except OSError:
            pass
    return numpy.frombuffer(buf, dtype=numpy.int64, count=words)


def setup(kernel, nbytes, seed):
    """The kernel's data and a function doing one pass (-> lines touched)."""
    import numpy  # only here: the probe's worker process

    lines = nbytes // (8 * WORDS_PER_LINE)
    rng = numpy.random.default_rng(seed)
    if kernel == 'stream':
        a = _array(numpy, lines * WORDS_PER_LINE)
        a[:] = 1

        def one_pass():
            a.sum()
            return lines
        return one_pass
    order = rng.permutation(lines)
    nxt = _array(numpy, lines * WORDS_PER_LINE)
    nxt[order * WORDS_PER_LINE] = numpy.roll(order, -1) * WORDS_PER_LINE
    lanes = min(LANES, lines)
    state = {'x': order[::max(1, lines // lanes)][:lanes] * WORDS_PER_LINE}
    steps = max(1, lines // lanes)

    def one_pass():
        x = state['x']
        for _ in range(steps):
            x = nxt[x]
        state['x'] = x
        return steps * len(x)
    return one_pass


def main(argv):
    """Run the protocol of ``kernel.c``."""
    kernel, nbytes, samples, span, seed = (
        argv[0], int(argv[1]), int(argv[2]), float(argv[3]), int(argv[4]))
    if kernel not in ('chase', 'stream') or nbytes < 128:
        return 2
    one_pass = setup(kernel, nbytes, seed)
    one_pass()
    print('ready', flush=True)
    done = 0
    while samples == 0 or done < samples:
        w0, c0 = time.perf_counter(), time.process_time()
        lines = 0
        while True:
            lines += one_pass()
            if time.perf_counter() - w0 >= span:
                break
        cpu = time.process_time() - c0
        wall = time.perf_counter() - w0
        done += 1
        print('%.6f %.6f %.6f' % (cpu * 1e9 / lines, cpu, wall), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
