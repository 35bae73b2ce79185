/* SPDX-License-Identifier: Apache-2.0 */
/* What the uC/OS-II port's files share: priorities, deadlines as ticks. */
#ifndef RTB_UCOS2_PORT_H
#define RTB_UCOS2_PORT_H

#include <stdbool.h>

#include "ucos_ii.h"

#include "../../core/rtb.h"
#include "firmware.h"

/* The task that runs the agent's plan: the runner's and the cases' own
 * frames, at most 4,816 bytes in the quick suite (JIT-PER, CLK-DUR,
 * THR-NEW; a check's detail is formatted into the record's body, IRQ-SUS's
 * search kept in its case memory); bench/bench_rtos.py prints each case's
 * high-water mark. 6.5 KiB: over a third more, as the case threads' stacks
 * have; the run ends loudly when it comes within 16 bytes of the end. */
#define RTB_UCOS2_MAIN_STACK (6656)
#define RTB_UCOS2_QUEUES 8
#define RTB_UCOS2_QUEUE_ARENA (64 * 1024)
#define RTB_BULK __attribute__((section(".psram")))

/* One task per priority, 0 the most urgent. Priorities 1..16 are the
 * mutexes' ceilings (each mutex needs one of its own, above every thread
 * that may lock it); rtbench p is 119 - p (99 -> 20, 1 -> 118), "normal"
 * threads 119, idle OS_LOWEST_PRIO. */
#define UCOS2_CEILINGS 16u
#define UCOS2_CEILING_BASE 1u
#define UCOS2_NORMAL_PRIO 119u
static inline INT8U ucos2_prio(int rtb) { return (INT8U)(119 - rtb); }
static inline int rtb_prio_of(INT8U p)
{
    if (p < UCOS2_CEILING_BASE + UCOS2_CEILINGS)
        return RTB_PRIO_MAX; /* raised to a mutex's ceiling: above them all */
    return p >= UCOS2_NORMAL_PRIO ? 0 : 119 - (int)p;
}

#define TICK_NS (1000000000LL / OS_TICKS_PER_SEC)

/* Ticks to wait for `deadline`, rounded up plus the partly gone current
 * tick (never early; callers re-check the clock). 0 means "forever" to
 * uC/OS-II: a passed deadline is the caller's to handle. */
static inline INT32U ticks_until(rtb_time deadline, bool *passed)
{
    *passed = false;
    if (deadline == RTB_FOREVER)
        return 0;
    rtb_time left = deadline - rtb_clock_now();
    if (left <= 0) {
        *passed = true;
        return 0;
    }
    rtb_time t = (left + TICK_NS - 1) / TICK_NS + 1;
    return t >= 0x7fffffff ? 0x7fffffff : (INT32U)t;
}

static inline bool in_isr(void) { return OSIntNesting > 0u; }

#endif
