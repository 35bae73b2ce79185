/* SPDX-License-Identifier: Apache-2.0 */
/* Timestamps for the POSIX port: CLOCK_MONOTONIC_RAW (not slewed by NTP,
 * read through the vDSO) and the CPU cycle counter where there is one. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rtb.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define CYCLES_SOURCE "rdtsc"
static inline uint64_t read_cycles(void) { return __rdtsc(); }
#elif defined(__aarch64__)
#define CYCLES_SOURCE "cntvct_el0"
static inline uint64_t read_cycles(void)
{
    uint64_t v;
    __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
}
#else
#define CYCLES_SOURCE ""
static inline uint64_t read_cycles(void) { return 0; }
#endif

rtb_time rtb_ts_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (rtb_time)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t rtb_cycles_now(void) { return read_cycles(); }

/* a * 10^9 / d without a 128-bit type (32-bit targets have none): exact
 * while (a % d) * 10^9 fits 64 bits, i.e. for any d below 18 GHz / 18 s. */
static uint64_t mul_1e9_div(uint64_t a, uint64_t d)
{
    return a / d * 1000000000u + a % d * 1000000000u / d;
}

rtb_time rtb_cycles_to_ns(const rtb_timing_info *info, uint64_t cycles)
{
    if (!info->cycles_hz)
        return 0;
    return (rtb_time)mul_1e9_div(cycles, info->cycles_hz);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

#define BATCHES 201
#define PER_BATCH 64

/* Median over batches of the mean cost of one read: robust to the
 * interrupts that land in a few batches. */
static int64_t clock_overhead(void)
{
    int64_t cost[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        rtb_time t0 = rtb_ts_now();
        for (int i = 0; i < PER_BATCH - 1; i++)
            (void)rtb_ts_now();
        rtb_time t1 = rtb_ts_now();
        cost[b] = (t1 - t0) / PER_BATCH;
    }
    qsort(cost, BATCHES, sizeof cost[0], cmp_i64);
    return cost[BATCHES / 2];
}

static int64_t cycles_overhead(const rtb_timing_info *info)
{
    int64_t cost[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        uint64_t c0 = read_cycles();
        for (int i = 0; i < PER_BATCH - 1; i++)
            (void)read_cycles();
        uint64_t c1 = read_cycles();
        cost[b] = rtb_cycles_to_ns(info, c1 - c0) / PER_BATCH;
    }
    qsort(cost, BATCHES, sizeof cost[0], cmp_i64);
    return cost[BATCHES / 2];
}

#if defined(__x86_64__) || defined(__i386__)
/* Whether a line of /proc/cpuinfo's "flags" names `flag` (a whole word). */
static bool has_word(const char *line, const char *flag)
{
    size_t n = strlen(flag);
    for (const char *p = strstr(line, flag); p; p = strstr(p + 1, flag))
        if ((p == line || p[-1] == ' ' || p[-1] == '\t') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
            return true;
    return false;
}

/* The TSC stamps measured windows only where its rate never changes with
 * frequency scaling (constant_tsc) nor stops in deep C-states (nonstop_tsc):
 * the kernel's flags, which include its own quirks (a hypervisor that
 * hides them); cpuid's invariant-TSC bit where /proc is not mounted. */
static bool tsc_invariant(char *reason, size_t cap)
{
    const char *path = "/proc/cpuinfo";
#ifdef RTB_TEST_HOOKS
    /* Test builds read a made-up cpuinfo: the fallback's known answer. */
    const char *fake = getenv("RTB_TEST_CPUINFO");
    if (fake && *fake)
        path = fake;
#endif
    FILE *f = fopen(path, "r");
    if (!f) {
        unsigned a, b, c, d;
        bool inv = __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8));
        snprintf(reason, cap, inv ? "invariant TSC (cpuid 0x80000007)"
                                  : "TSC not invariant (cpuid 0x80000007; no %s)", path);
        return inv;
    }
    static char line[4096]; /* once, before any case: not on a stack */
    bool seen = false, constant = false, nonstop = false;
    while (!seen && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        seen = true;
        constant = has_word(line, "constant_tsc");
        nonstop = has_word(line, "nonstop_tsc");
    }
    fclose(f);
    if (!constant || !nonstop) {
        snprintf(reason, cap, "TSC not invariant: no%s%s in %s", constant ? "" : " constant_tsc",
                 nonstop ? "" : " nonstop_tsc", path);
        return false;
    }
    /* Invariant on each CPU is not the same on every CPU: the kernel checks
     * that (its TSC sync test) and keeps its own clock elsewhere when it
     * does not trust the TSC; a window that spans two CPUs needs the same. */
    const char *cs_path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
#ifdef RTB_TEST_HOOKS
    const char *fake_cs = getenv("RTB_TEST_CLOCKSOURCE");
    if (fake_cs && *fake_cs)
        cs_path = fake_cs;
#endif
    char cs[32] = "";
    FILE *c = fopen(cs_path, "r");
    if (c) {
        if (!fgets(cs, sizeof cs, c))
            cs[0] = '\0';
        fclose(c);
        cs[strcspn(cs, "\n")] = '\0';
    }
    if (cs[0] && strcmp(cs, "tsc") != 0) {
        snprintf(reason, cap, "invariant TSC, but the kernel's clocksource is %s, not tsc", cs);
        return false;
    }
    snprintf(reason, cap, "invariant TSC (constant_tsc nonstop_tsc in %s%s)", path,
             cs[0] ? "; the kernel's clocksource is tsc" : "");
    return true;
}
#elif defined(__aarch64__)
static bool tsc_invariant(char *reason, size_t cap)
{
    snprintf(reason, cap, "cntvct_el0: the architected timer, constant rate on every CPU");
    return true;
}

static uint64_t counter_hz(void)
{
    uint64_t v;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(v));
    return v;
}
#else
static bool tsc_invariant(char *reason, size_t cap)
{
    snprintf(reason, cap, "no cycle counter on this architecture");
    return false;
}
#endif

int rtb_timing_init(rtb_timing_info *info)
{
    snprintf(info->clock_source, sizeof info->clock_source, "clock_gettime(CLOCK_MONOTONIC_RAW)");
    struct timespec res;
    clock_getres(CLOCK_MONOTONIC_RAW, &res);
    info->clock_resolution_ns = (int64_t)res.tv_sec * 1000000000 + res.tv_nsec;
    info->clock_read_overhead_ns = clock_overhead();
    info->cycles_available = read_cycles() != 0;
    if (!info->cycles_available) {
        snprintf(info->stamp_reason, sizeof info->stamp_reason, "no cycle counter");
        return RTB_OK;
    }
    snprintf(info->cycles_source, sizeof info->cycles_source, "%s", CYCLES_SOURCE);
    /* Calibrate over ~50 ms; a preemption inside the window only shifts
     * both ends, it does not bias the rate. */
    rtb_time t0 = rtb_ts_now();
    uint64_t c0 = read_cycles();
    struct timespec nap = {0, 50000000};
    nanosleep(&nap, NULL);
    rtb_time t1 = rtb_ts_now();
    uint64_t c1 = read_cycles();
    info->cycles_hz = t1 > t0 ? mul_1e9_div(c1 - c0, (uint64_t)(t1 - t0)) : 0;
#if defined(__aarch64__)
    /* The timer's own rate is exact; the calibration only confirms it (an
     * emulator whose counter runs at another rate keeps the calibrated). */
    uint64_t hz = counter_hz();
    if (hz && info->cycles_hz && hz / 100 * 99 < info->cycles_hz && info->cycles_hz < hz / 100 * 101)
        info->cycles_hz = hz;
#endif
    info->cycles_read_overhead_ns = cycles_overhead(info);
    info->cycles_stamp = tsc_invariant(info->stamp_reason, sizeof info->stamp_reason);
    if (info->cycles_stamp && !info->cycles_hz) {
        info->cycles_stamp = false;
        snprintf(info->stamp_reason, sizeof info->stamp_reason, "the counter did not advance");
    }
    return RTB_OK;
}
