/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The timestamp source for measured sections, apart from the porting layer
 * so that a port can make it as cheap as its hardware allows (Zephyr's
 * timing.h is the model). Two sources: the OS clock (always) and the CPU
 * cycle counter (where the port has one), calibrated against the clock.
 */
#ifndef RTB_TIMING_H
#define RTB_TIMING_H

#include <stdbool.h>
#include <stdint.h>

#include "rtb/types.h"

typedef struct rtb_timing_info {
    char clock_source[64];   /* e.g. "clock_gettime(CLOCK_MONOTONIC_RAW)" */
    int64_t clock_resolution_ns;
    int64_t clock_read_overhead_ns; /* median cost of one read, measured */
    bool cycles_available;
    char cycles_source[32];  /* "rdtsc", "cntvct_el0" */
    uint64_t cycles_hz;      /* calibrated against the clock */
    int64_t cycles_read_overhead_ns;
    /* The counter is fit to stamp measured windows: its rate never changes
     * (an invariant TSC, the architected arm64 timer, a board's timer) and
     * the CPUs agree on it. Else measured windows fall back to rtb_ts_now;
     * `stamp_reason` says why either way (the hello record carries it). */
    bool cycles_stamp;
    char stamp_reason[160];
} rtb_timing_info;

/* Calibrates the cycle counter and measures the read overheads (~100 ms). */
int rtb_timing_init(rtb_timing_info *info);
/* The measurement timestamp in ns: monotonic, not slewed. */
rtb_time rtb_ts_now(void);
/* The raw cycle counter (0 where unavailable) and its conversion. */
uint64_t rtb_cycles_now(void);
rtb_time rtb_cycles_to_ns(const rtb_timing_info *info, uint64_t cycles);

#endif
