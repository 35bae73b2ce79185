/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Optional: hardware latency for NOISE-HW, the time a CPU loses while its
 * interrupts are off (firmware, SMIs, a hypervisor: what no OS code can
 * cause). Two ways, a port has at most one:
 *   - the agent masks interrupts itself (an RTOS board: rtb_irq_off) and
 *     the case runs the sampling loop;
 *   - the OS has a detector of its own that masks them in its kernel
 *     (Linux: the hwlat tracer), which rtb_hwlat_os drives: a user-space
 *     agent cannot turn interrupts off.
 * Where neither exists (core/hwlat_none.c) both answer RTB_ENOTSUP with the
 * reason, and the case is unsupported. Same rules as port.h.
 */
#ifndef RTB_HWLAT_H
#define RTB_HWLAT_H

#include <stddef.h>
#include <stdint.h>

#include "rtb/port.h"

/* Masks the calling CPU's interrupts; `*state` goes back to
 * rtb_irq_restore. RTB_ENOTSUP (with `why`) where the agent cannot. */
int rtb_irq_off(uint32_t *state, char *why, size_t whycap);
void rtb_irq_restore(uint32_t state);

typedef struct rtb_hwlat_req {
    int cpu;            /* where the detector samples, -1: the OS's choice */
    rtb_time duration;  /* how long it runs */
    rtb_time width;     /* interrupts off for this long ... */
    rtb_time window;    /* ... at the start of every window */
    rtb_time threshold; /* gaps this long are recorded; 0: the detector's default */
} rtb_hwlat_req;

typedef struct rtb_hwlat_out {
    rtb_time threshold; /* the one the detector used */
    int64_t lost;       /* gaps the detector saw but could not report */
    char source[64];    /* what measured, for the record */
} rtb_hwlat_out;

/* One gap of `gap` ns that began `at` ns after the detector started. */
typedef void (*rtb_hwlat_gap_fn)(void *arg, rtb_time gap, rtb_time at);

/* Runs the OS's detector for req->duration and gives every gap it recorded
 * to `fn`. Blocks; outside measured sections only. RTB_ENOTSUP: there is
 * none here; RTB_EPERM: not allowed; RTB_EFAIL: it would not run (in use by
 * someone else). `why` says which. */
int rtb_hwlat_os(const rtb_hwlat_req *req, rtb_hwlat_gap_fn fn, void *arg, rtb_hwlat_out *out,
                 char *why, size_t whycap);

#endif
