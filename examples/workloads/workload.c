/*
 * workload.c - artificial workloads whose run time is proportional to an
 * operation count (duet paper, RQ4: integer, float, cache, memory).
 *
 *   workload KIND OPS [ITERATIONS] [-o FILE]
 *
 * KIND
 *   int     integer loop in registers / L1 (xorshift-multiply chain)
 *   float   floating point loop in registers / L1 (dependent multiply-add chain)
 *   linear  linear walk over a 4 MiB buffer, one 64-byte cache line per op
 *   random  pointer chase through a random cyclic permutation of the 64-byte
 *           lines of a 64 MiB buffer, one line per op
 * OPS         operations per iteration (time is proportional to OPS)
 * ITERATIONS  timed iterations (default 1)
 * -o FILE     write CSV "iteration,start_ns,end_ns,cpu_ns,runq_ns" to FILE:
 *             start/end CLOCK_REALTIME ns since the epoch (iteration 0-based);
 *             cpu_ns the process's CPU time in the iteration
 *             (CLOCK_PROCESS_CPUTIME_ID), runq_ns the time it was ready to run
 *             but waited for a CPU (the scheduler's run delay from
 *             /proc/self/schedstat; empty where there is none): duetbench's
 *             generic parser takes both (docs/parsers.md)
 *
 * Synchronous duet: when built with -DDUET_SYNC and duetbench's duet_sync.h
 * (the Makefile does this when it finds the header), every iteration waits for
 * the coordinator's "go" if DUET_SYNC_DIR is set (duetbench docs/sync.md).
 * Built without it, a set DUET_SYNC_DIR is an error rather than a silent
 * unsynchronized run.
 *
 * Buffer allocation and initialisation happen once, before the first
 * iteration and outside the timed region. A checksum is printed to stdout
 * (and stored to a volatile sink) so the compiler cannot remove the work.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef DUET_SYNC
#include "duet_sync.h"
#endif

#define LINE 64u
#define LINEAR_BYTES (4u << 20)  /* 4 MiB */
#define RANDOM_BYTES (64u << 20) /* 64 MiB */

volatile uint64_t sink;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* the scheduler's run delay of this thread in ns, or -1 where /proc has none */
static int64_t runq_ns(void) {
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f) return -1;
    unsigned long long on_cpu = 0, delay = 0;
    int got = fscanf(f, "%llu %llu", &on_cpu, &delay);
    fclose(f);
    return got == 2 ? (int64_t)delay : -1;
}

/* splitmix64: deterministic generator for setup only */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void usage(void) {
    fprintf(stderr,
            "usage: workload KIND OPS [ITERATIONS] [-o FILE]\n"
            "  KIND: int | float | linear | random\n");
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != '\0' || s[0] == '-') return -1;
    *out = (uint64_t)v;
    return 0;
}

/* ---- synchronous duet -------------------------------------------------- */

static int sync_check(void) {
#ifndef DUET_SYNC
    const char *dir = getenv("DUET_SYNC_DIR");
    if (dir != NULL && dir[0] != '\0') {
        fprintf(stderr, "workload: DUET_SYNC_DIR is set but this build has no duet_sync.h "
                        "support; rebuild with the Makefile (see README.md)\n");
        return 2;
    }
#endif
    return 0;
}

static int sync_wait(void) {
#ifdef DUET_SYNC
    char err[256];
    int rc = duet_sync_wait(err, sizeof err);
    if (rc != DUET_SYNC_OK) fprintf(stderr, "workload: %s\n", err);
    return rc;
#else
    return 0;
#endif
}

static void sync_done(void) {
#ifdef DUET_SYNC
    char err[256];
    if (duet_sync_done(err, sizeof err) != DUET_SYNC_OK) fprintf(stderr, "workload: %s\n", err);
#endif
}

/* ---- kinds ------------------------------------------------------------- */

static uint64_t run_int(uint64_t ops, uint64_t x) {
    for (uint64_t i = 0; i < ops; i++) {
        x ^= x >> 29;
        x *= 0xbf58476d1ce4e5b9u;
        x += i;
    }
    return x;
}

static double run_float(uint64_t ops, double x) {
    /* converges to 0.5 / (1 - 0.9999999); stays normal, never overflows */
    const double a = 0.9999999, b = 0.5;
    for (uint64_t i = 0; i < ops; i++) x = x * a + b;
    return x;
}

static uint64_t run_linear(uint64_t ops, const uint64_t *buf, size_t *pos) {
    const size_t step = LINE / sizeof(uint64_t);
    const size_t mask = LINEAR_BYTES / sizeof(uint64_t) - 1;
    size_t p = *pos;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < ops; i++) {
        sum += buf[p];
        p = (p + step) & mask;
    }
    *pos = p;
    return sum;
}

static uint64_t run_random(uint64_t ops, const uint64_t *buf, size_t *pos) {
    /* buf[line * 8] holds the element index of the next line */
    size_t p = *pos;
    for (uint64_t i = 0; i < ops; i++) p = (size_t)buf[p];
    *pos = p;
    return (uint64_t)p;
}

/* ---- setup ------------------------------------------------------------- */

static uint64_t *alloc_buf(size_t bytes) {
    void *mem = NULL;
    if (posix_memalign(&mem, 4096, bytes) != 0) return NULL;
    memset(mem, 0, bytes); /* fault every page in before timing */
    return mem;
}

static uint64_t *setup_linear(void) {
    uint64_t *buf = alloc_buf(LINEAR_BYTES);
    if (!buf) return NULL;
    for (size_t i = 0; i < LINEAR_BYTES / sizeof(uint64_t); i++) buf[i] = i * 2654435761u;
    return buf;
}

static uint64_t *setup_random(void) {
    const size_t lines = RANDOM_BYTES / LINE;
    const size_t step = LINE / sizeof(uint64_t);
    uint64_t *buf = alloc_buf(RANDOM_BYTES);
    uint32_t *perm = malloc(lines * sizeof(uint32_t));
    if (!buf || !perm) {
        free(buf);
        free(perm);
        return NULL;
    }
    for (size_t i = 0; i < lines; i++) perm[i] = (uint32_t)i;
    /* Sattolo's algorithm: a uniformly random permutation that is one cycle */
    uint64_t state = 42;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)(splitmix64(&state) % i);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < lines; i++) buf[(size_t)perm[i] * step] = (uint64_t)perm[(i + 1) % lines] * step;
    free(perm);
    return buf;
}

/* ---- main -------------------------------------------------------------- */

int main(int argc, char **argv) {
    const char *outpath = NULL;
    const char *pos_args[3];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0) {
            if (++i >= argc) {
                usage();
                return 2;
            }
            outpath = argv[i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage();
            return 0;
        } else if (npos < 3) {
            pos_args[npos++] = argv[i];
        } else {
            usage();
            return 2;
        }
    }
    if (npos < 2) {
        usage();
        return 2;
    }
    const char *kind = pos_args[0];
    uint64_t ops, iterations = 1;
    if (parse_u64(pos_args[1], &ops) != 0 || (npos == 3 && parse_u64(pos_args[2], &iterations) != 0)) {
        fprintf(stderr, "workload: OPS and ITERATIONS must be non-negative integers\n");
        return 2;
    }

    enum { K_INT, K_FLOAT, K_LINEAR, K_RANDOM } k;
    if (strcmp(kind, "int") == 0) k = K_INT;
    else if (strcmp(kind, "float") == 0) k = K_FLOAT;
    else if (strcmp(kind, "linear") == 0) k = K_LINEAR;
    else if (strcmp(kind, "random") == 0) k = K_RANDOM;
    else {
        fprintf(stderr, "workload: unknown KIND '%s'\n", kind);
        usage();
        return 2;
    }

    int rc = sync_check();
    if (rc != 0) return rc;

    uint64_t *buf = NULL;
    if (k == K_LINEAR) buf = setup_linear();
    if (k == K_RANDOM) buf = setup_random();
    if ((k == K_LINEAR || k == K_RANDOM) && !buf) {
        fprintf(stderr, "workload: out of memory\n");
        return 1;
    }

    uint64_t *starts = NULL, *ends = NULL, *cpus = NULL;
    int64_t *delays = NULL;
    if (outpath) {
        starts = calloc(iterations ? iterations : 1, sizeof(uint64_t));
        ends = calloc(iterations ? iterations : 1, sizeof(uint64_t));
        cpus = calloc(iterations ? iterations : 1, sizeof(uint64_t));
        delays = calloc(iterations ? iterations : 1, sizeof(int64_t));
        if (!starts || !ends || !cpus || !delays) {
            fprintf(stderr, "workload: out of memory\n");
            return 1;
        }
    }

    /* seed the chains from the run time inputs so nothing is constant */
    uint64_t ix = ops ^ (uint64_t)argc ^ 0x2545f4914f6cdd1du;
    double fx = 1.0 + (double)(ops & 7);
    uint64_t checksum = 0;
    size_t pos = 0;
    for (uint64_t it = 0; it < iterations; it++) {
        rc = sync_wait();
        if (rc != 0) return rc;
        int64_t q0 = outpath ? runq_ns() : -1;
        uint64_t c0 = outpath ? cpu_ns() : 0;
        uint64_t t0 = now_ns();
        switch (k) {
        case K_INT: ix = run_int(ops, ix); checksum ^= ix; break;
        case K_FLOAT: {
            fx = run_float(ops, fx);
            uint64_t bits;
            memcpy(&bits, &fx, sizeof bits);
            checksum ^= bits;
            break;
        }
        case K_LINEAR: checksum += run_linear(ops, buf, &pos); break;
        case K_RANDOM: checksum += run_random(ops, buf, &pos); break;
        }
        sink = checksum;
        uint64_t t1 = now_ns();
        if (outpath) {
            uint64_t c1 = cpu_ns();
            int64_t q1 = runq_ns();
            starts[it] = t0;
            ends[it] = t1;
            cpus[it] = c1 - c0;
            delays[it] = (q0 >= 0 && q1 >= q0) ? q1 - q0 : -1;
        }
    }

    sync_done();

    if (outpath) {
        FILE *f = fopen(outpath, "w");
        if (!f) {
            fprintf(stderr, "workload: cannot write %s: %s\n", outpath, strerror(errno));
            return 1;
        }
        fprintf(f, "iteration,start_ns,end_ns,cpu_ns,runq_ns\n");
        for (uint64_t it = 0; it < iterations; it++) {
            fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", it, starts[it], ends[it],
                    cpus[it]);
            if (delays[it] >= 0) fprintf(f, "%" PRId64, delays[it]);
            fputc('\n', f);
        }
        if (fclose(f) != 0) {
            fprintf(stderr, "workload: cannot write %s: %s\n", outpath, strerror(errno));
            return 1;
        }
    }
    printf("%s ops=%" PRIu64 " iterations=%" PRIu64 " checksum=%016" PRIx64 "\n", kind, ops,
           iterations, checksum);
    free(buf);
    free(starts);
    free(ends);
    free(cpus);
    free(delays);
    return 0;
}
