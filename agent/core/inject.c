/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection for known-answer tests; compiled into test builds only.
 * A process-wide table is acceptable here: it is test instrumentation set
 * once from the command line before any case runs, not an option. What the
 * injections do to the port's primitives is in inject_port.c. */
#if defined(__linux__)
#define _GNU_SOURCE
#include <sched.h>
#define CURRENT_CPU() sched_getcpu()
#else
#define CURRENT_CPU() 0 /* where the CPU is not known, no CPU reads ahead */
#endif
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rtb.h"

#ifdef RTB_TEST_HOOKS

static int64_t injected[RTB_INJ_COUNT];
static const char *const sites[RTB_INJ_COUNT] = {
    [RTB_INJ_YIELD_DELAY] = "yield_delay",
    [RTB_INJ_GIVE_DELAY] = "give_delay",
    [RTB_INJ_SEM_NOBLOCK] = "sem_noblock",
    [RTB_INJ_REF_DELAY] = "ref_delay",
    [RTB_INJ_IGNORE_STOP] = "ignore_stop",
    [RTB_INJ_CLOCK_BACK] = "clock_back",
    [RTB_INJ_CLOCK_SKEW] = "clock_skew",
    [RTB_INJ_SEM_FIFO] = "sem_fifo",
    [RTB_INJ_NEW_PRIO] = "new_prio",
    [RTB_INJ_OP_DELAY] = "op_delay",
    [RTB_INJ_MUTEX_NOPI] = "mutex_nopi",
    [RTB_INJ_EVENT_DELAY] = "event_delay",
    [RTB_INJ_LINE_DELAY] = "line_delay",
    [RTB_INJ_LINE_MUTE] = "line_mute",
    [RTB_INJ_STIM_SKEW] = "stim_skew",
    [RTB_INJ_SCHED_NOLOCK] = "sched_nolock",
    [RTB_INJ_STALL] = "stall",
    [RTB_INJ_WAKE_DELAY] = "wake_delay",
    [RTB_INJ_HW_STALL] = "hw_stall",
    [RTB_INJ_THREAD_STACK] = "thread_stack",
    [RTB_INJ_SERIES_BUFFER] = "series_buffer",
    [RTB_INJ_STAMP_BLOCK] = "stamp_block",
    [RTB_INJ_WAKE_LATE] = "wake_late",
    [RTB_INJ_IO_HOLD] = "io_hold",
    [RTB_INJ_LOAD_HOLD] = "load_hold",
};

int rtb_inject_set(const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return RTB_EINVAL;
    for (int i = 0; i < RTB_INJ_COUNT; i++) {
        if (strlen(sites[i]) == (size_t)(eq - assignment) &&
            strncmp(sites[i], assignment, (size_t)(eq - assignment)) == 0) {
            injected[i] = strtoll(eq + 1, NULL, 10);
            return RTB_OK;
        }
    }
    return RTB_EINVAL;
}

static atomic_bool armed;

void rtb_inject_arm(bool on) { atomic_store(&armed, on); }

int64_t rtb_inject_value(rtb_inject_site site)
{
    return atomic_load_explicit(&armed, memory_order_relaxed) ? injected[site] : 0;
}

int64_t rtb_inject_setting(rtb_inject_site site) { return injected[site]; }

rtb_time rtb_inject_clock(rtb_time t)
{
    static atomic_long reads;
    int64_t every = rtb_inject_value(RTB_INJ_CLOCK_BACK);
    int64_t skew = rtb_inject_value(RTB_INJ_CLOCK_SKEW);
    if (every > 0 && atomic_fetch_add(&reads, 1) % every == 0)
        t -= 1000;
    if (skew && CURRENT_CPU() != 0)
        t += skew;
    return t;
}

void rtb_inject_delay(rtb_inject_site site)
{
    int64_t d = rtb_inject_value(site);
    if (d <= 0)
        return;
    /* Busy-wait on the measurement clock: a sleep would hand the CPU to
     * another thread and change what is measured. */
    rtb_time until = rtb_clock_now_isr() + d; /* also in event handlers */
    while (rtb_clock_now_isr() < until)
        ;
}

#endif
