/* SPDX-License-Identifier: Apache-2.0 */
/* NOISE-HW on Linux: a user-space agent cannot turn interrupts off, the
 * kernel's hwlat tracer can (CONFIG_HWLAT_TRACER). Its kernel thread spins
 * with interrupts off for `width` of every `window` on the CPUs of
 * tracing_cpumask and writes a line per window in which two reads of the
 * clock were `tracing_thresh` or more apart. This drives it through
 * tracefs: set it up, run it, read its lines, and put back what it found.
 * Its lines read (kernels 4.9 to 6.x):
 *   <...>-1234 [000] d... 12.3: #1 inner/outer(us): 12/11 ts:1499801089.066141940 count:6
 * inner: a gap between two reads inside the loop; outer: between two of
 * its iterations; count (newer kernels): gaps above threshold in that
 * window, of which the line reports the largest. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rtb/hwlat.h"

static const char *const roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

typedef struct saved {
    const char *file;
    char value[512];
    bool ok;
} saved;

/* A tracefs file's contents, trailing newline dropped; -errno on failure. */
static int get(const char *root, const char *file, char *buf, size_t cap)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, cap - 1);
    int e = errno;
    close(fd);
    if (n < 0)
        return -e;
    buf[n] = 0;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = 0;
    return 0;
}

static int put(const char *root, const char *file, const char *value)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, file);
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, value, strlen(value));
    int e = errno;
    close(fd);
    return n < 0 ? -e : 0;
}

static int putf(const char *root, const char *file, long long v)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", v);
    return put(root, file, s);
}

/* width <= window must hold after every write: the one that shrinks goes
 * first. */
static int set_width_window(const char *root, long long width, long long window,
                            long long old_width)
{
    int e;
    if (window >= old_width)
        return (e = putf(root, "hwlat_detector/window", window)) != 0
                   ? e : putf(root, "hwlat_detector/width", width);
    return (e = putf(root, "hwlat_detector/width", width)) != 0
               ? e : putf(root, "hwlat_detector/window", window);
}

static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
        if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
            return true;
    return false;
}

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Gives every hwlat line of the trace to `fn`; the lines the buffer lost
 * are counted in out->lost. */
static int read_gaps(const char *root, int64_t t0, rtb_hwlat_gap_fn fn, void *arg,
                     rtb_hwlat_out *out)
{
    char path[256];
    snprintf(path, sizeof path, "%s/trace", root);
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        const char *io = strstr(line, "inner/outer(us):");
        const char *ts = strstr(line, "ts:");
        long long inner, outer, sec, nsec, count = 1;
        if (!io || !ts || sscanf(io, "inner/outer(us): %lld/%lld", &inner, &outer) != 2 ||
            sscanf(ts, "ts:%lld.%lld", &sec, &nsec) != 2)
            continue;
        const char *c = strstr(line, "count:");
        if (c && sscanf(c, "count:%lld", &count) == 1 && count > 1)
            out->lost += count - 1; /* the line reports the largest of them */
        rtb_time gap = (rtb_time)(inner > outer ? inner : outer) * 1000;
        fn(arg, gap, (rtb_time)(sec * 1000000000 + nsec) - t0);
    }
    fclose(f);
    return 0;
}

static int why_errno(int e, const char *what, char *why, size_t whycap)
{
    snprintf(why, whycap, "%s: %s%s", what, strerror(e),
             e == EACCES || e == EPERM ? " (the hwlat tracer needs root)" : "");
    return e == EACCES || e == EPERM ? RTB_EPERM : RTB_EFAIL;
}

int rtb_hwlat_os(const rtb_hwlat_req *req, rtb_hwlat_gap_fn fn, void *arg, rtb_hwlat_out *out,
                 char *why, size_t whycap)
{
    static char buf[4096];
    const char *root = NULL;
    int e = ENOENT;
    for (size_t i = 0; i < sizeof roots / sizeof roots[0] && !root; i++) {
        e = -get(roots[i], "available_tracers", buf, sizeof buf);
        if (!e)
            root = roots[i];
        else if (e == EACCES || e == EPERM)
            break;
    }
    if (!root) {
        if (e == EACCES || e == EPERM)
            return why_errno(e, "/sys/kernel/tracing/available_tracers", why, whycap);
        snprintf(why, whycap, "no tracefs with available_tracers at /sys/kernel/tracing or "
                 "/sys/kernel/debug/tracing: the kernel's hwlat tracer cannot be reached");
        return RTB_ENOTSUP;
    }
    if (!has_word(buf, "hwlat")) {
        snprintf(why, whycap, "the kernel has no hwlat tracer (CONFIG_HWLAT_TRACER); "
                 "%s/available_tracers lists: %.200s", root, buf[0] ? buf : "nothing");
        return RTB_ENOTSUP;
    }
    if ((e = -get(root, "current_tracer", buf, sizeof buf)) != 0)
        return why_errno(e, "current_tracer", why, whycap);
    if (strcmp(buf, "nop") != 0) {
        snprintf(why, whycap, "the kernel's tracer is in use: current_tracer is %.60s", buf);
        return RTB_EFAIL;
    }
    saved keep[] = {{.file = "tracing_thresh"}, {.file = "hwlat_detector/width"},
                    {.file = "hwlat_detector/window"}, {.file = "tracing_cpumask"},
                    {.file = "tracing_on"}};
    size_t nkeep = sizeof keep / sizeof keep[0];
    for (size_t i = 0; i < nkeep; i++)
        keep[i].ok = get(root, keep[i].file, keep[i].value, sizeof keep[i].value) == 0;
    int r = RTB_OK;
    /* tracing_thresh in us (0: hwlat's default, 10 us). */
    long long thr_us = (req->threshold + 999) / 1000, width = req->width / 1000,
              window = req->window / 1000, old_width = atoll(keep[1].value);
    if ((e = -put(root, "trace", "")) != 0 || (e = -putf(root, "tracing_thresh", thr_us)) != 0)
        r = why_errno(e, "tracing_thresh", why, whycap);
    else if ((e = -set_width_window(root, width, window, old_width)) != 0)
        r = why_errno(e, "hwlat_detector width/window", why, whycap);
    else if (req->cpu >= 0) {
        char mask[32];
        snprintf(mask, sizeof mask, "%llx", 1ull << (req->cpu & 63));
        if ((e = -put(root, "tracing_cpumask", mask)) != 0)
            r = why_errno(e, "tracing_cpumask", why, whycap);
    }
    int64_t t0 = realtime_ns();
    if (r == RTB_OK && (e = -put(root, "current_tracer", "hwlat")) != 0)
        r = why_errno(e, "current_tracer = hwlat", why, whycap);
    if (r == RTB_OK) {
        put(root, "tracing_on", "1");
        if (get(root, "tracing_thresh", buf, sizeof buf) == 0)
            out->threshold = (rtb_time)atoll(buf) * 1000;
        snprintf(out->source, sizeof out->source, "the kernel's hwlat tracer");
        struct timespec d = {.tv_sec = req->duration / 1000000000,
                             .tv_nsec = req->duration % 1000000000};
        while (nanosleep(&d, &d) != 0 && errno == EINTR)
            ;
        put(root, "tracing_on", "0");
        if ((e = -read_gaps(root, t0, fn, arg, out)) != 0)
            r = why_errno(e, "trace", why, whycap);
    }
    /* Everything back as it was, the tracer first (it restores the
     * threshold it found when it started). */
    put(root, "current_tracer", "nop");
    for (size_t i = 0; i < nkeep; i++)
        if (keep[i].ok && i != 1 && i != 2)
            put(root, keep[i].file, keep[i].value);
    if (keep[1].ok && keep[2].ok && r != RTB_EPERM)
        set_width_window(root, atoll(keep[1].value), atoll(keep[2].value), width);
    return r;
}

int rtb_irq_off(uint32_t *state, char *why, size_t whycap)
{
    (void)state;
    snprintf(why, whycap, "a user-space agent cannot turn interrupts off (the kernel's hwlat "
             "tracer does it instead)");
    return RTB_ENOTSUP;
}

void rtb_irq_restore(uint32_t state) { (void)state; }
