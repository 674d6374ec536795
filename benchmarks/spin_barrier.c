/*
 * spin_barrier: a bulk-synchronous parallel program whose threads meet at a
 * spinning barrier after every round, like OpenMP codes with active waiting
 * (study 004's BT) -- the kind of program that suffers when it runs more
 * threads than the CPUs it really gets (lock-holder preemption, stacking).
 *
 *   spin_barrier run THREADS ROUNDS WORK [SPIN]
 *       total WORK units split evenly over THREADS, ROUNDS barriers; prints
 *       the wall time in seconds. Waiters spin forever (SPIN < 0, default)
 *       or SPIN pause instructions and then sleep on a futex, like
 *       libgomp's OMP_WAIT_POLICY default.
 *   spin_barrier burn THREADS              THREADS busy threads, forever
 *
 * Built by benchmarks/pcpu_est_bench.py (gcc -O2 -pthread).
 */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int nthreads;
static long rounds;
static long units_per_round;       /* per thread */
static long spin_limit = -1;       /* < 0: spin forever */
static atomic_int arrived;
static atomic_int sense;
static volatile uint64_t sink;

static uint64_t work(long units, uint64_t x)
{
    for (long i = 0; i < units; i++)
        for (int j = 0; j < 1000; j++)
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

static void barrier(int *local_sense)
{
    *local_sense = !*local_sense;
    if (atomic_fetch_add(&arrived, 1) == nthreads - 1) {
        atomic_store(&arrived, 0);
        atomic_store(&sense, *local_sense);
        if (spin_limit >= 0)
            syscall(SYS_futex, &sense, FUTEX_WAKE_PRIVATE, INT_MAX,
                    NULL, NULL, 0);
    } else {
        long spins = 0;
        while (atomic_load_explicit(&sense, memory_order_acquire)
               != *local_sense) {
            if (spin_limit >= 0 && spins++ >= spin_limit)
                /* sleeps only while sense still has the old value */
                syscall(SYS_futex, &sense, FUTEX_WAIT_PRIVATE,
                        !*local_sense, NULL, NULL, 0);
            else
                __builtin_ia32_pause();
        }
    }
}

static void *worker(void *arg)
{
    uint64_t x = (uintptr_t)arg;
    int local_sense = 0;
    for (long r = 0; r < rounds; r++) {
        x = work(units_per_round, x);
        barrier(&local_sense);
    }
    sink += x;
    return NULL;
}

static void *burner(void *arg)
{
    uint64_t x = (uintptr_t)arg;
    for (;;)
        x = work(1000, x);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "burn") == 0) {
        int n = atoi(argv[2]);
        pthread_t t;
        for (int i = 1; i < n; i++)
            pthread_create(&t, NULL, burner, (void *)(uintptr_t)i);
        burner(NULL);
    }
    if ((argc != 5 && argc != 6) || strcmp(argv[1], "run") != 0) {
        fprintf(stderr, "usage: %s run THREADS ROUNDS WORK [SPIN] | "
                "burn THREADS\n", argv[0]);
        return 2;
    }
    if (argc == 6)
        spin_limit = atol(argv[5]);
    nthreads = atoi(argv[2]);
    rounds = atol(argv[3]);
    long total = atol(argv[4]);
    if (nthreads < 1 || rounds < 1 || total < 1)
        return 2;
    units_per_round = total / ((long)nthreads * rounds);
    if (units_per_round < 1)
        units_per_round = 1;
    pthread_t *t = calloc(nthreads, sizeof(*t));
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 1; i < nthreads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    worker((void *)(uintptr_t)nthreads);
    for (int i = 1; i < nthreads; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
