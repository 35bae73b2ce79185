/* SPDX-License-Identifier: Apache-2.0 */
/* The cpu, memory, io and irq loads on POSIX. Each thread sets itself up,
 * says it is ready, loops until told to stop and cleans up after itself;
 * ops count its units of work. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "load_impl.h"
#include "rtb.h" /* test builds' injected faults */

/* ---- cpu: busy loops, a duty cycle at a real-time priority ------------- */

enum { CPU_BUSY, CPU_IDLE };
static const load_param cpu_params[] = {
    {"busy_us", "busy stretch before each idle one", 1000, 1, 1000000},
    {"idle_us", "sleep after each busy stretch (-1: 0 at normal priority, busy_us at a "
                "real-time one)", -1, -1, 1000000},
};

static void cpu_run(load_worker *w)
{
    rtb_time busy = load_value(w, CPU_BUSY) * 1000, idle = load_value(w, CPU_IDLE) * 1000;
    if (idle < 0)
        idle = w->load->priority ? busy : 0;
    volatile uint64_t x = (uint64_t)w->id + 1;
    load_ready(w);
    while (!load_stopping(w)) {
        rtb_time end = rtb_clock_now() + busy;
        do {
            for (int i = 0; i < 1000; i++) /* a chunk: ~1 us */
                x = x * 6364136223846793005u + 1442695040888963407u;
            load_count(w, 1);
        } while (rtb_clock_now() < end && !load_stopping(w));
        if (idle)
            rtb_sleep_until(rtb_clock_now() + idle);
    }
}

static int cpu_validate(const rtb_load_spec *s, char *err, size_t errcap)
{
    if (s->priority && s->v[CPU_IDLE] == 0) {
        snprintf(err, errcap, "load cpu:prio=%d with idle_us=0 would hold its CPUs for good "
                 "(everything below it starves): give idle_us > 0", s->priority);
        return RTB_EINVAL;
    }
    return RTB_OK;
}

const load_kind load_kind_cpu = {
    .name = "cpu",
    .unit = "thousand busy-loop iterations",
    .what = "busy loops; at prio=P (real-time) a duty cycle of busy_us on, idle_us off",
    .params = cpu_params,
    .nparams = sizeof cpu_params / sizeof cpu_params[0],
    .run = cpu_run,
    .validate = cpu_validate,
};

/* ---- memory: thrashing a buffer larger than the last-level cache ------- */

static const load_param mem_params[] = {
    {"mb", "buffer per thread in MiB (0: twice the last-level cache, 16..1024)", 0, 0, 65536},
};

#define LINE 64
#define STRIDE 4099 /* lines (~256 KiB): a prime, so the walk visits every line */

static size_t llc_bytes(void)
{
    long s = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (s <= 0)
        s = sysconf(_SC_LEVEL2_CACHE_SIZE);
    for (int idx = 4; s <= 0 && idx >= 0; idx--) {
        char path[96], text[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        long v = 0;
        char unit = 'K';
        if (fgets(text, sizeof text, f) && sscanf(text, "%ld%c", &v, &unit) >= 1)
            s = v * (unit == 'M' ? 1024 * 1024 : unit == 'K' ? 1024 : 1);
        fclose(f);
    }
    return s > 0 ? (size_t)s : 0;
}

static void memory_run(load_worker *w)
{
    size_t mb = (size_t)load_value(w, 0);
    if (mb == 0) {
        mb = 2 * llc_bytes() / (1024 * 1024) + 1;
        mb = mb < 16 ? 16 : mb > 1024 ? 1024 : mb;
    }
    size_t bytes = mb * 1024 * 1024, lines = bytes / LINE;
    if (lines % STRIDE == 0)
        lines--;
    /* Under mlockall(MCL_FUTURE) this is populated and locked here. */
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
        load_fail(w, "cannot map %llu MiB: %s (set memory:mb=)", (unsigned long long)mb,
                  strerror(errno));
        return;
    }
    load_ready(w);
    size_t i = (size_t)w->id * 7919 % lines;
    while (!load_stopping(w)) {
        for (int k = 0; k < 16384; k++) { /* 1 MiB of lines, far apart */
            (*(volatile uint64_t *)(p + i * LINE))++;
            i += STRIDE;
            if (i >= lines)
                i -= lines;
        }
        load_count(w, 1);
    }
    munmap(p, bytes);
}

const load_kind load_kind_memory = {
    .name = "memory",
    .unit = "MiB of cache lines written",
    .what = "cache and memory thrashing: read-modify-write of lines 256 KiB apart over a "
            "buffer twice the last-level cache",
    .params = mem_params,
    .nparams = sizeof mem_params / sizeof mem_params[0],
    .run = memory_run,
};

/* ---- io: write + fsync in a private temporary folder ------------------- */

enum { IO_KB, IO_FILE_MB };
static const load_param io_params[] = {
    {"kb", "bytes per write, KiB", 64, 1, 16384},
    {"file_mb", "the file is truncated and rewritten from the start past this size", 16, 1,
     4096},
};

/* An unnamed file (O_TMPFILE): nothing to remove however the agent ends,
 * and its blocks are freed when the last descriptor closes. Where the file
 * system cannot, a named one unlinked at once. */
static int io_open(char *path, size_t cap)
{
    const char *base = load_tmp_base();
    snprintf(path, cap, "%s", base);
    int fd = open(base, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    snprintf(path, cap, "%s/rtbench-load-%d-ioXXXXXX", base, (int)getpid());
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    else
        snprintf(path, cap, "%s", base); /* for the message */
    return fd;
}

static void io_run(load_worker *w)
{
    size_t len = (size_t)load_value(w, IO_KB) * 1024;
    off_t wrap = (off_t)load_value(w, IO_FILE_MB) * 1024 * 1024, off = 0;
    char path[200];
    char *buf = malloc(len);
    int fd = buf ? io_open(path, sizeof path) : -1;
    if (fd < 0) {
        load_fail(w, "cannot write a file in %s: %s", path, buf ? strerror(errno) : "no memory");
        free(buf);
        return;
    }
    memset(buf, 'r', len);
    load_ready(w);
    while (!load_stopping(w)) {
        load_in_io(w, true);
        bool written = pwrite(fd, buf, len, off) >= 0 && fsync(fd) == 0;
        load_in_io(w, false);
        if (!written) {
            rtb_sleep_until(rtb_clock_now() + 1000000); /* disk full: keep trying, gently */
            continue;
        }
        load_count(w, 1);
        off += (off_t)len;
        if (off + (off_t)len > wrap) {
            off = 0;
            load_in_io(w, true);
            int cut = ftruncate(fd, 0); /* frees the blocks: journal work too */
            load_in_io(w, false);
            if (cut != 0)
                continue; /* the next pass writes over the old blocks */
        }
    }
    /* Test builds: the stop's known answers (tests/agent/test_loads.py). */
    if (RTB_INJECT_SETTING(RTB_INJ_LOAD_HOLD))
        rtb_sleep_until(rtb_clock_now() + RTB_INJECT_SETTING(RTB_INJ_LOAD_HOLD));
    load_in_io(w, true); /* the unnamed file's blocks are freed here */
    if (RTB_INJECT_SETTING(RTB_INJ_IO_HOLD))
        rtb_sleep_until(rtb_clock_now() + RTB_INJECT_SETTING(RTB_INJ_IO_HOLD));
    close(fd);
    free(buf);
}

const load_kind load_kind_io = {
    .name = "io",
    .unit = "fsync'd writes",
    .what = "write + fsync to an unnamed file (O_TMPFILE) in $TMPDIR or /tmp",
    .params = io_params,
    .nparams = sizeof io_params / sizeof io_params[0],
    .run = io_run,
};

/* ---- irq: high-rate POSIX timers whose signals hit the load threads ---- */

enum { IRQ_PERIOD, IRQ_TIMERS };
static const load_param irq_params[] = {
    {"period_us", "period of each timer", 100, 10, 1000000},
    {"timers", "timers per thread (staggered)", 1, 1, 16},
};

/* Above the port's event signals (SIGRTMIN + 0..7). Its handler stays
 * installed for good: a late signal must never meet the default action,
 * which ends the process. */
#define IRQ_SIG (SIGRTMAX - 2)

static void on_irq(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    if (si->si_code == SI_TIMER && si->si_value.sival_ptr)
        load_count(si->si_value.sival_ptr, 1);
}

static void irq_run(load_worker *w)
{
    static atomic_bool installed;
    if (!atomic_exchange(&installed, true)) {
        struct sigaction sa = {.sa_sigaction = on_irq, .sa_flags = SA_SIGINFO | SA_RESTART};
        sigemptyset(&sa.sa_mask);
        sigaction(IRQ_SIG, &sa, NULL);
    }
    int nt = (int)load_value(w, IRQ_TIMERS);
    rtb_time period = load_value(w, IRQ_PERIOD) * 1000;
    timer_t timers[16];
    int made = 0;
    for (; made < nt; made++) {
        struct sigevent sev = {0};
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = IRQ_SIG;
        sev.sigev_value.sival_ptr = w;
        sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
        if (timer_create(CLOCK_MONOTONIC, &sev, &timers[made]) != 0)
            break;
        rtb_time first = period * (made + 1) / nt;
        struct itimerspec its = {
            .it_value = {first / 1000000000, first % 1000000000},
            .it_interval = {period / 1000000000, period % 1000000000}};
        if (timer_settime(timers[made], 0, &its, NULL) != 0) {
            timer_delete(timers[made]);
            break;
        }
    }
    if (made < nt)
        load_fail(w, "timer: %s", strerror(errno));
    else
        load_ready(w);
    while (made == nt && !load_stopping(w)) {
        struct timespec ts = {0, 1000000}; /* signals cut it short: fine */
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < made; i++)
        timer_delete(timers[i]);
}

const load_kind load_kind_irq = {
    .name = "irq",
    .unit = "timer signals handled",
    .what = "high-rate POSIX timers (CLOCK_MONOTONIC) whose signals interrupt the load "
            "threads",
    .params = irq_params,
    .nparams = sizeof irq_params / sizeof irq_params[0],
    .run = irq_run,
};
