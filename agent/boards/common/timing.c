/* SPDX-License-Identifier: Apache-2.0 */
/* Timestamps and the clock of the RTOS ports: the board's free-running counter
 * (mps2-an385: TIMER1 at 25 MHz, 40 ns a tick), read as it is by
 * rtb_cycles_now and in ns by rtb_ts_now. QEMU does not emulate the DWT
 * cycle counter, so the timer is the finest clock there is. */
#include <stdio.h>
#include <stdlib.h>

#include "../../core/rtb.h"
#include "firmware.h"

/* Deadlines and timestamps share the counter: the kernel's tick is too
 * coarse for either (a wait is re-checked against this clock). */
rtb_time rtb_clock_now(void) { return (rtb_time)board_ts_ticks() * BOARD_TS_NS; }

/* board_ts_ticks masks interrupts for its read: safe in any context. */
rtb_time rtb_clock_now_isr(void) { return rtb_clock_now(); }

void rtb_port_abort(int status)
{
    fflush(stdout);
    board_exit(status);
}

int rtb_trace_open(const char *path)
{
    (void)path;
    return RTB_ENOTSUP;
}

void rtb_trace_mark(const char *text) { (void)text; }
void rtb_trace_stop(void) {}

/* SysTick (every Cortex-M): the tick interrupt comes when its counter,
 * counting down from RELOAD at the CPU clock, reaches 0. */
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

/* A kernel's delay ends at a tick interrupt: the lattice is the tick, its
 * phase the last time SysTick reached 0. The clock is read first, so the
 * phase is at most a few instructions early (a latency a few ns long),
 * never late (a wake-up at the tick would then be before its release and
 * sleep a tick more). */
rtb_time firmware_systick_grain(rtb_time *phase, rtb_time tick_ns)
{
    uint32_t primask;
    __asm__ volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
    rtb_time now = rtb_clock_now();
    uint32_t val = SYST_CVR, reload = SYST_RVR;
    __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory");
    uint64_t since = val ? (uint64_t)reload + 1 - val : 0; /* CPU cycles */
    *phase = now - (rtb_time)(since * 1000000000u / BOARD_CPU_HZ);
    return tick_ns;
}

rtb_time rtb_ts_now(void)
{
    /* Test builds inject clock faults in core (--wrap=rtb_ts_now), once. */
    return (rtb_time)board_ts_ticks() * BOARD_TS_NS;
}

uint64_t rtb_cycles_now(void) { return board_ts_ticks(); }

rtb_time rtb_cycles_to_ns(const rtb_timing_info *info, uint64_t cycles)
{
    if (!info->cycles_hz)
        return 0;
    return (rtb_time)(cycles / info->cycles_hz * 1000000000u +
                      cycles % info->cycles_hz * 1000000000u / info->cycles_hz);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

#define BATCHES 31
#define PER_BATCH 32

static int64_t overhead(bool cycles)
{
    static int64_t cost[BATCHES]; /* static: not on the caller's stack */
    for (int b = 0; b < BATCHES; b++) {
        rtb_time t0 = rtb_ts_now();
        for (int i = 0; i < PER_BATCH - 1; i++) {
            if (cycles)
                (void)rtb_cycles_now();
            else
                (void)rtb_ts_now();
        }
        rtb_time t1 = rtb_ts_now();
        cost[b] = (t1 - t0) / PER_BATCH;
    }
    qsort(cost, BATCHES, sizeof cost[0], cmp_i64);
    return cost[BATCHES / 2];
}

int rtb_timing_init(rtb_timing_info *info)
{
    snprintf(info->clock_source, sizeof info->clock_source, "%s", BOARD_TS_SOURCE);
    info->clock_resolution_ns = BOARD_TS_NS;
    info->clock_read_overhead_ns = overhead(false);
    /* The same counter, raw: its rate is the board's, not calibrated. */
    info->cycles_available = true;
    snprintf(info->cycles_source, sizeof info->cycles_source, "timer");
    info->cycles_hz = BOARD_TS_HZ;
    info->cycles_read_overhead_ns = overhead(true);
    info->cycles_stamp = true;
    snprintf(info->stamp_reason, sizeof info->stamp_reason, "the board's free-running timer");
    return RTB_OK;
}
