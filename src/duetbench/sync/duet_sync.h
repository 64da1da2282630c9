/*
 * duet_sync.h -- duetbench's synchronous-duet handshake for C and C++.
 *
 * Single header, no library, POSIX only (open/write/read/poll). Include it and
 * call duet_sync_wait() before each iteration, duet_sync_done() after the last:
 *
 *     char err[256];
 *     for (int i = 0; i < n; i++) {
 *         int rc = duet_sync_wait(err, sizeof err);
 *         if (rc != DUET_SYNC_OK) { fprintf(stderr, "%s\n", err); return rc; }
 *         ... timed iteration ...
 *     }
 *     duet_sync_done(err, sizeof err);
 *
 * Environment: DUET_SYNC_DIR (unset or empty: not a synchronous duet, both calls
 * return DUET_SYNC_OK at once), DUET_PAIR (A or B), DUET_SYNC_TIMEOUT (seconds
 * to wait for go, default 600, 0 = forever), DUET_SYNC_WAIT (spin, the default:
 * wait for go busy; block: asleep in poll(); fill, which has no benchmark to call
 * here: spin). Protocol: duetbench docs/sync.md.
 *
 * Return values: DUET_SYNC_OK (0), DUET_SYNC_TIMEOUT (1: no go in time),
 * DUET_SYNC_ERROR (2: bad environment, no coordinator, coordinator gone); on
 * failure a message goes to err (may be NULL). Usable as an exit status.
 *
 * No global state: the functions open and close the FIFOs on every call.
 * Compile with the default gnu dialect, or define _POSIX_C_SOURCE 200809L
 * (or _GNU_SOURCE) before any #include when using -std=c99/c11.
 */
#ifndef DUET_SYNC_H
#define DUET_SYNC_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DUET_SYNC_OK 0
#define DUET_SYNC_TIMEOUT 1
#define DUET_SYNC_ERROR 2

#define DUET_SYNC_DEFAULT_TIMEOUT_S 600.0
#define DUET_SYNC_PATH_MAX 4096

/* Internal helpers: prefixed duet_sync__, static inline (no unused warnings). */

static inline int duet_sync__fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        int n = snprintf(err, errlen, "duet_sync: ");
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < errlen)
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return code;
}

struct duet_sync__config {
    const char *dir;
    const char *pair;
    double timeout_s; /* <= 0: forever */
    int spin;         /* DUET_SYNC_WAIT: 1 spin (default, keeps the CPU busy), 0 block */
    char ready[DUET_SYNC_PATH_MAX];
    char go[DUET_SYNC_PATH_MAX];
};

/* 1: not a synchronous duet; 0: configured; DUET_SYNC_ERROR: bad environment. */
static inline int duet_sync__configure(struct duet_sync__config *c, char *err, size_t errlen)
{
    const char *p, *t;
    char *end;
    c->dir = getenv("DUET_SYNC_DIR");
    if (c->dir == NULL || c->dir[0] == '\0')
        return 1;
    c->pair = getenv("DUET_PAIR");
    if (c->pair == NULL || c->pair[0] == '\0' || strlen(c->pair) > 32)
        return duet_sync__fail(err, errlen, DUET_SYNC_ERROR,
                               "DUET_PAIR must be a side name such as A or B");
    for (p = c->pair; *p; p++) {
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
              (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return duet_sync__fail(err, errlen, DUET_SYNC_ERROR,
                                   "DUET_PAIR='%s' must be a side name such as A or B", c->pair);
    }
    c->timeout_s = DUET_SYNC_DEFAULT_TIMEOUT_S;
    t = getenv("DUET_SYNC_TIMEOUT");
    if (t != NULL && t[0] != '\0') {
        errno = 0;
        c->timeout_s = strtod(t, &end);
        if (errno != 0 || *end != '\0' || !(c->timeout_s >= 0.0) || c->timeout_s > 1e9)
            return duet_sync__fail(err, errlen, DUET_SYNC_ERROR,
                                   "DUET_SYNC_TIMEOUT='%s' is not a number of seconds >= 0", t);
    }
    t = getenv("DUET_SYNC_WAIT");
    c->spin = 1;
    if (t != NULL && t[0] != '\0') {
        if (strcmp(t, "block") == 0)
            c->spin = 0;
        else if (strcmp(t, "spin") != 0 && strcmp(t, "fill") != 0)
            return duet_sync__fail(err, errlen, DUET_SYNC_ERROR,
                                   "DUET_SYNC_WAIT='%s' must be fill, spin or block", t);
    }
    if (snprintf(c->ready, sizeof c->ready, "%s/ready", c->dir) >= (int)sizeof c->ready ||
        snprintf(c->go, sizeof c->go, "%s/go.%s", c->dir, c->pair) >= (int)sizeof c->go)
        return duet_sync__fail(err, errlen, DUET_SYNC_ERROR, "DUET_SYNC_DIR is too long");
    return 0;
}

static inline double duet_sync__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Milliseconds left for poll(); -1 = forever. */
static inline int duet_sync__remaining_ms(double deadline)
{
    double ms;
    if (deadline < 0.0)
        return -1;
    ms = (deadline - duet_sync__now()) * 1000.0 + 0.999;
    if (ms <= 0.0)
        return 0;
    if (ms > (double)INT_MAX)
        return INT_MAX;
    return (int)ms;
}

/* Open a FIFO non-blocking; -1 with the message in err on failure. */
static inline int duet_sync__open(const char *path, int flags, char *err, size_t errlen)
{
    struct stat st;
    int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENXIO)
            duet_sync__fail(err, errlen, 0, "no coordinator is listening on %s", path);
        else
            duet_sync__fail(err, errlen, 0, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
        close(fd);
        duet_sync__fail(err, errlen, 0, "%s is not a named pipe (FIFO)", path);
        return -1;
    }
    return fd;
}

/* Write one short line (< PIPE_BUF: atomic) to the ready FIFO. */
static inline int duet_sync__send(const struct duet_sync__config *c, const char *line,
                                  double deadline, char *err, size_t errlen)
{
    size_t len = strlen(line);
    /* O_WRONLY|O_NONBLOCK fails with ENXIO when nobody reads: no coordinator. */
    int fd = duet_sync__open(c->ready, O_WRONLY, err, errlen);
    if (fd < 0)
        return DUET_SYNC_ERROR;
    for (;;) {
        ssize_t n = write(fd, line, len);
        if (n == (ssize_t)len)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd pfd = {fd, POLLOUT, 0};
            int r = poll(&pfd, 1, duet_sync__remaining_ms(deadline));
            if (r == 0) {
                close(fd);
                return duet_sync__fail(err, errlen, DUET_SYNC_TIMEOUT,
                                       "%s stayed full: is the coordinator stuck?", c->ready);
            }
            continue;
        }
        close(fd);
        return duet_sync__fail(err, errlen, DUET_SYNC_ERROR, "cannot write to %s: %s", c->ready,
                               n < 0 ? strerror(errno) : "short write");
    }
    close(fd);
    return DUET_SYNC_OK;
}

/* Signal ready, block until go. */
static inline int duet_sync_wait(char *err, size_t errlen)
{
    struct duet_sync__config c;
    double deadline;
    char ready[40], line[8];
    size_t got = 0;
    int fd, rc;

    rc = duet_sync__configure(&c, err, errlen);
    if (rc == 1)
        return DUET_SYNC_OK;
    if (rc != 0)
        return rc;
    deadline = c.timeout_s > 0.0 ? duet_sync__now() + c.timeout_s : -1.0;
    /* Open go first: the coordinator holds its write end, so its exit shows as POLLHUP. */
    fd = duet_sync__open(c.go, O_RDONLY, err, errlen);
    if (fd < 0)
        return DUET_SYNC_ERROR;
    snprintf(ready, sizeof ready, "%s\n", c.pair); /* one write: atomic */
    rc = duet_sync__send(&c, ready, deadline, err, errlen);
    if (rc != DUET_SYNC_OK) {
        close(fd);
        return rc;
    }
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        ssize_t n;
        int r = poll(&pfd, 1, c.spin ? 0 : duet_sync__remaining_ms(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0 && c.spin && (deadline < 0.0 || duet_sync__now() < deadline))
            continue; /* spinning: the other side is never timed beside an idle CPU */
        if (r == 0) {
            close(fd);
            return duet_sync__fail(err, errlen, DUET_SYNC_TIMEOUT,
                                   "side %s: no go within %g s (DUET_SYNC_TIMEOUT)", c.pair,
                                   c.timeout_s);
        }
        if (r < 0) {
            close(fd);
            return duet_sync__fail(err, errlen, DUET_SYNC_ERROR, "poll: %s", strerror(errno));
        }
        n = read(fd, line + got, 1); /* byte by byte: never consume beyond our line */
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0) {
            close(fd);
            return duet_sync__fail(err, errlen, DUET_SYNC_ERROR,
                                   "side %s: the coordinator closed %s", c.pair, c.go);
        }
        got++;
        if (line[got - 1] == '\n' || got == sizeof line - 1)
            break;
    }
    close(fd);
    line[got] = '\0';
    if (strcmp(line, "go\n") != 0)
        return duet_sync__fail(err, errlen, DUET_SYNC_ERROR, "side %s: unexpected message on %s",
                               c.pair, c.go);
    return DUET_SYNC_OK;
}

/* Tell the coordinator this side will not iterate any more. */
static inline int duet_sync_done(char *err, size_t errlen)
{
    struct duet_sync__config c;
    char line[48];
    int rc = duet_sync__configure(&c, err, errlen);
    if (rc == 1)
        return DUET_SYNC_OK;
    if (rc != 0)
        return rc;
    snprintf(line, sizeof line, "%s done\n", c.pair);
    return duet_sync__send(&c, line, c.timeout_s > 0.0 ? duet_sync__now() + c.timeout_s : -1.0,
                           err, errlen);
}

#endif /* DUET_SYNC_H */
