/*
 * A stand-in for a Renaissance harness, for benchmarks/container_study.py (issue 36).
 *
 *   standin [-r REPETITIONS] [--json FILE] [--work UNITS] [BENCHMARK]
 *
 * Runs REPETITIONS (default 12) repetitions of a fixed integer loop of UNITS steps
 * (20000000: about 22 ms on the project VM) and writes them in Renaissance 0.11+'s
 * --json format: `duration_ns` and `uptime_ns` per repetition, the start in
 * `environment.vm.start_unix_ms` (src/duetbench/parse/renaissance.py reads it). Before
 * every repetition it waits at the sduet handshake (duet_sync.h: a no-op outside a
 * synchronous duet; it spins for its go, the header's default), as a harness with
 * duetbench's handshake compiled in would.
 *
 *   gcc -O2 -static -I src/duetbench/sync -o standin benchmarks/container_standin.c
 */
#include "duet_sync.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static volatile uint64_t sink;

static void work(long steps)
{
    uint64_t x = 1;
    for (long i = 0; i < steps; i++) /* an LCG: cannot be folded away */
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    sink = x;
}

int main(int argc, char **argv)
{
    char err[512];
    int reps = 12, rc;
    long units = 20000000;
    const char *out = NULL, *bench = "standin";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--work") && i + 1 < argc)
            units = atol(argv[++i]);
        else
            bench = argv[i];
    }
    if (reps < 1) {
        fprintf(stderr, "-r must be at least 1\n");
        return 2;
    }
    /* the "JVM" start: wall clock in ms, and the monotonic clock at that moment */
    int64_t real0 = now(CLOCK_REALTIME), mono0 = now(CLOCK_MONOTONIC);
    int64_t start_ms = real0 / 1000000, offset = real0 - start_ms * 1000000;
    int64_t *uptime = calloc((size_t)reps, sizeof *uptime);
    int64_t *duration = calloc((size_t)reps, sizeof *duration);
    if (uptime == NULL || duration == NULL)
        return 2;
    for (int r = 0; r < reps; r++) {
        rc = duet_sync_wait(err, sizeof err);
        if (rc != DUET_SYNC_OK) {
            fprintf(stderr, "%s\n", err);
            return rc;
        }
        int64_t t0 = now(CLOCK_MONOTONIC);
        work(units);
        int64_t t1 = now(CLOCK_MONOTONIC);
        uptime[r] = t0 - mono0 + offset;
        duration[r] = t1 - t0;
    }
    rc = duet_sync_done(err, sizeof err);
    if (rc != DUET_SYNC_OK) {
        fprintf(stderr, "%s\n", err);
        return rc;
    }
    FILE *f = out ? fopen(out, "w") : stdout;
    if (f == NULL) {
        perror(out);
        return 1;
    }
    fprintf(f,
            "{\"format_version\": 5, \"benchmarks\": [\"%s\"], \"environment\": {\"vm\": "
            "{\"start_unix_ms\": %lld, \"termination\": \"normal\"}}, \"data\": {\"%s\": "
            "{\"results\": [",
            bench, (long long)start_ms, bench);
    for (int r = 0; r < reps; r++)
        fprintf(f, "%s{\"duration_ns\": %lld, \"uptime_ns\": %lld}", r ? ", " : "",
                (long long)duration[r], (long long)uptime[r]);
    fprintf(f, "], \"termination\": \"normal\"}}}\n");
    return fclose(f) == 0 ? 0 : 1;
}
