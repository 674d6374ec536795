/* nova-cacheaware probe kernel: a dependent pointer chase or a streaming
 * read over BYTES of memory, timed in CPU time.
 *
 *   probe-kernel chase|stream BYTES SAMPLES SECONDS SEED
 *
 * Prints "ready" after setting up and one warm-up pass, then SAMPLES lines
 * "NS_PER_LINE CPU_SECONDS WALL_SECONDS", each sample running whole passes
 * for at least SECONDS of wall time. SAMPLES 0: the same lines until killed
 * (the co-runner). One 64-byte cache line per chase step; the stream reads
 * every word of each line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef struct line { uint64_t next; uint64_t pad[7]; } line_t;

static volatile uint64_t sink;
static uint64_t state;

static uint64_t xorshift(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static double seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t chase(const line_t *a, uint64_t steps, uint64_t *p)
{
    uint64_t q = *p;
    for (uint64_t i = 0; i < steps; i++)
        q = a[q].next;
    *p = q;
    return steps;
}

static uint64_t stream(const line_t *a, uint64_t n)
{
    const uint64_t *w = (const uint64_t *)a;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (uint64_t i = 0; i < n * 8; i += 4) {
        s0 += w[i];
        s1 += w[i + 1];
        s2 += w[i + 2];
        s3 += w[i + 3];
    }
    sink += s0 + s1 + s2 + s3;
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s chase|stream BYTES SAMPLES SECONDS SEED\n",
                argv[0]);
        return 2;
    }
    int is_chase = strcmp(argv[1], "chase") == 0;
    uint64_t n = strtoull(argv[2], NULL, 10) / sizeof(line_t);
    long samples = strtol(argv[3], NULL, 10);
    double span = strtod(argv[4], NULL);
    state = strtoull(argv[5], NULL, 10) | 1;
    if (n < 2 || (!is_chase && strcmp(argv[1], "stream") != 0))
        return 2;
    /* 2 MiB aligned and transparent huge pages where the kernel allows
     * them (madvise mode), so that TLB misses do not hide the cache. */
    size_t huge = 2u << 20;
    size_t size = (n * sizeof(line_t) + huge - 1) / huge * huge;
    line_t *a = aligned_alloc(huge, size);
    if (!a)
        return 3;
#ifdef MADV_HUGEPAGE
    madvise(a, size, MADV_HUGEPAGE);
#endif
    memset(a, 1, n * sizeof(line_t));
    for (uint64_t i = 0; i < n; i++)
        a[i].next = i;
    if (is_chase) {
        /* Sattolo: one cycle through every line, in random order. */
        for (uint64_t i = n - 1; i > 0; i--) {
            uint64_t j = xorshift() % i;
            uint64_t t = a[i].next;
            a[i].next = a[j].next;
            a[j].next = t;
        }
    }
    uint64_t p = 0;
    uint64_t chunk = is_chase ? (n < 65536 ? 65536 : n) : n;
    if (is_chase)
        chase(a, n, &p);
    else
        stream(a, n);
    printf("ready\n");
    fflush(stdout);
    for (long s = 0; samples == 0 || s < samples; s++) {
        double w0 = seconds(CLOCK_MONOTONIC);
        double c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        uint64_t lines = 0;
        do {
            lines += is_chase ? chase(a, chunk, &p) : stream(a, n);
        } while (seconds(CLOCK_MONOTONIC) - w0 < span);
        double cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
        double wall = seconds(CLOCK_MONOTONIC) - w0;
        printf("%.6f %.6f %.6f\n", cpu * 1e9 / lines, cpu, wall);
        fflush(stdout);
    }
    sink += p;
    return 0;
}
