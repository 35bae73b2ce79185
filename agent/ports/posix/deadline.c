/* SPDX-License-Identifier: Apache-2.0 */
/* SCHED_DEADLINE through sched_setattr(2): glibc has had no wrapper for most
 * of its life, so the syscall and its struct are spelled out here. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rtb/deadline.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

struct dl_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
};

const char *rtb_deadline_missing(void) { return NULL; }

int rtb_thread_self_deadline(rtb_time runtime, rtb_time deadline, rtb_time period, char *why,
                             size_t whycap)
{
#ifdef SYS_sched_setattr
    /* Admission needs the task free to run on every CPU of its domain. */
    cpu_set_t all;
    CPU_ZERO(&all);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < n && c < CPU_SETSIZE; c++)
        CPU_SET((int)c, &all);
    sched_setaffinity(0, sizeof all, &all);
    struct dl_attr a = {.size = sizeof a, .sched_policy = SCHED_DEADLINE,
                        .sched_runtime = (uint64_t)runtime, .sched_deadline = (uint64_t)deadline,
                        .sched_period = (uint64_t)period};
    if (syscall(SYS_sched_setattr, 0, &a, 0) == 0)
        return RTB_OK;
    int e = errno;
    if (why && whycap)
        snprintf(why, whycap, "sched_setattr(SCHED_DEADLINE, runtime %lld ns, deadline %lld ns, "
                 "period %lld ns): %s%s", (long long)runtime, (long long)deadline,
                 (long long)period, strerror(e),
                 e == EPERM ? " (needs root or CAP_SYS_NICE)"
                 : e == EBUSY ? " (the deadline bandwidth is taken: sched_rt_runtime_us)" : "");
    return e == EPERM ? RTB_EPERM : e == ENOSYS ? RTB_ENOTSUP : RTB_EINVAL;
#else
    (void)runtime, (void)deadline, (void)period;
    if (why && whycap)
        snprintf(why, whycap, "this system has no sched_setattr (SCHED_DEADLINE)");
    return RTB_ENOTSUP;
#endif
}
