/*
 * Example harness for a synchronous duet, in C.
 *
 *   harness RESULT_CSV [ITERATIONS [WORK]]
 *
 * Runs ITERATIONS (default 10) iterations of a small integer workload (WORK
 * steps, default 20000000). Before each iteration it waits for the other side
 * (duet_sync_wait; a no-op outside a synchronous duet). Writes
 * `iteration,start_ns,end_ns` (0-based, CLOCK_REALTIME ns) to RESULT_CSV.
 *
 * Build (duet_sync.h is in src/duetbench/sync/, or `python -m duetbench.sync path h`):
 *   gcc -O2 -Wall -Werror -I src/duetbench/sync -o harness examples/sync/harness.c
 *   gcc -O2 -Wall -Werror -static -I src/duetbench/sync -o harness examples/sync/harness.c
 */
#include "duet_sync.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t workload(uint64_t steps, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (uint64_t i = 0; i < steps; i++) { /* xorshift64: cannot be folded away */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

int main(int argc, char **argv)
{
    char err[512];
    long iterations = 10;
    uint64_t work = 20000000, sink = 0;
    int64_t *start, *end;
    FILE *out;
    int rc;

    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s RESULT_CSV [ITERATIONS [WORK]]\n", argv[0]);
        return 2;
    }
    if (argc > 2)
        iterations = strtol(argv[2], NULL, 10);
    if (argc > 3)
        work = strtoull(argv[3], NULL, 10);
    if (iterations < 0) {
        fprintf(stderr, "ITERATIONS must be >= 0\n");
        return 2;
    }
    start = calloc((size_t)iterations + 1, sizeof *start);
    end = calloc((size_t)iterations + 1, sizeof *end);
    if (start == NULL || end == NULL)
        return 2;

    for (long i = 0; i < iterations; i++) {
        rc = duet_sync_wait(err, sizeof err);
        if (rc != DUET_SYNC_OK) {
            fprintf(stderr, "%s\n", err);
            return rc;
        }
        start[i] = now_ns();
        sink += workload(work, (uint64_t)i + 1);
        end[i] = now_ns();
    }
    rc = duet_sync_done(err, sizeof err);
    if (rc != DUET_SYNC_OK) {
        fprintf(stderr, "%s\n", err);
        return rc;
    }

    out = fopen(argv[1], "w");
    if (out == NULL) {
        perror(argv[1]);
        return 2;
    }
    fprintf(out, "iteration,start_ns,end_ns\n");
    for (long i = 0; i < iterations; i++)
        fprintf(out, "%ld,%lld,%lld\n", i, (long long)start[i], (long long)end[i]);
    if (fclose(out) != 0) {
        perror(argv[1]);
        return 2;
    }
    free(start);
    free(end);
    return sink == 42 ? 3 : 0; /* use the result so the work is not optimized away */
}
