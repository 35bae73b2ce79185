/* SPDX-License-Identifier: Apache-2.0 */
/* What the uC/OS-III port's files share: pools, priorities, deadlines as
 * ticks. */
#ifndef RTB_UCOS3_PORT_H
#define RTB_UCOS3_PORT_H

#include <stdbool.h>

#include "os.h"

#include "../../core/rtb.h"
#include "firmware.h"

#define RTB_UCOS3_THREADS 1040 /* THR-SW: 1000 threads in turn */
#define RTB_UCOS3_STACK_ARENA (RTB_UCOS3_THREADS * RTB_THREAD_STACK)
#define RTB_UCOS3_QUEUES 8
#define RTB_UCOS3_QUEUE_ARENA (64 * 1024)
/* The task that runs the agent's plan: the runner's and the cases' own
 * frames, at most 4,816 bytes in the quick suite (JIT-PER, CLK-DUR,
 * THR-NEW; a check's detail is formatted into the record's body, IRQ-SUS's
 * search kept in its case memory); bench/bench_rtos.py prints each case's
 * high-water mark. 6.5 KiB: over a third more, as the case threads' stacks
 * have; the run ends loudly when it comes within 16 bytes of the end. */
#define RTB_UCOS3_MAIN_STACK (6656)
/* Bulk memory (mps2-an385: PSRAM), not cleared at start. */
#define RTB_BULK __attribute__((section(".psram")))

/* rtbench 1 (lowest) .. 99 (highest) onto uC/OS-III's 99 .. 1 (0 is the
 * most urgent there); "normal" threads at 100, idle at 101. */
#define UCOS_NORMAL_PRIO 100u
static inline OS_PRIO ucos_prio(int rtb) { return (OS_PRIO)(RTB_PRIO_MAX + 1 - rtb); }
static inline int rtb_prio_of(OS_PRIO p)
{
    return p >= UCOS_NORMAL_PRIO ? 0 : RTB_PRIO_MAX + 1 - (int)p;
}

#define TICK_NS (1000000000LL / OS_CFG_TICK_RATE_HZ)

/* Ticks to wait for `deadline`, rounded up plus the partly gone current
 * tick (never early; callers re-check the clock). 0 means "forever" to
 * uC/OS-III: a passed deadline is the caller's to handle (left <= 0). */
static inline OS_TICK ticks_until(rtb_time deadline, bool *passed)
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
    return t >= 0x7fffffff ? 0x7fffffff : (OS_TICK)t;
}

static inline bool in_isr(void) { return OSIntNestingCtr > 0u; }

#endif
