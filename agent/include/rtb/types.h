/* SPDX-License-Identifier: Apache-2.0 */
/* Types shared by the porting layer, the timing interface and the core. */
#ifndef RTB_TYPES_H
#define RTB_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "rtb/config.h"

/* Nanoseconds. Signed so that differences and "not yet" are natural. */
typedef int64_t rtb_time;

enum {
    RTB_OK = 0,
    RTB_EINVAL = -1,    /* a bad argument */
    RTB_ENOMEM = -2,    /* out of memory or of OS objects */
    RTB_EPERM = -3,     /* not permitted */
    RTB_ETIMEDOUT = -4, /* the deadline passed */
    RTB_EAGAIN = -5,    /* would block and the caller said not to */
    RTB_ENOTSUP = -6,   /* the port cannot do this */
    RTB_EFAIL = -7      /* anything else */
};

/* What the port found at start-up; goes into the `hello` record. */
typedef struct rtb_port_info {
    const char *port;     /* "posix", "freertos" */
    char sysname[72];
    char release[128];
    char version[256];
    char machine[72];
    char cpu_model[128];
    int cpu_count;
    /* The CPUs this process may run on, ascending (POSIX: sched_getaffinity,
     * which taskset and cpusets narrow); ncpus_allowed 0: all of
     * 0..cpu_count-1. Cases pick their CPUs among these (core/cpus.c). */
    int cpus_allowed[RTB_MAX_CPUS];
    int ncpus_allowed;
    /* The kernel's own view, read on the target (empty where unknown). */
    char preempt[32];       /* PREEMPT_RT, PREEMPT_DYNAMIC, PREEMPT or "" */
    char preempt_mode[32];  /* the dynamic mode in effect (debugfs), or "" */
    char cmdline[RTB_OS_CMDLINE_CAP]; /* the OS's boot command line, if it has one */
    char clocksource[64];
    char isolated_cpus[128];
    bool realtime;        /* real-time priorities are available */
    char policy[32];      /* "SCHED_FIFO", or what the port falls back to */
    char rt_detail[192];  /* why not real-time, when not */
    bool memory_locked;
    char mlock_detail[128];
    /* How the event sources reach their handler (for check details):
     * "POSIX timer (CLOCK_MONOTONIC) + real-time signal handler",
     * "CMSDK TIMER0 interrupt (IRQ 8)". */
    char event_timer[128]; /* rtb_event_arm */
    char event_raise[128]; /* rtb_event_raise */
    bool sched_lock;       /* rtb_sched_lock works (THR-LOCK runs) */
    char sched_lock_detail[256]; /* why not, when not */
    bool loads;            /* background loads (set by the core) */
    /* A kernel that runs one task per priority (uC/OS-II): threads cannot
     * share a priority and rtb_thread_yield has no equal to switch to; the
     * cases that need either are unsupported, with this detail. */
    bool one_task_per_priority;
    char one_task_detail[192];
    /* What an RTB_MUTEX_PI mutex does against inversion, when it is not
     * priority inheritance (uC/OS-II: a priority ceiling); "" means
     * inheritance. MUT-B-PI and MUT-ARC name it and never claim more. */
    char mutex_protocol[160];
    /* The CPU's power management during the run, as the port left it
     * (Linux: C-states held off through /dev/cpu_dma_latency, as cyclictest
     * does); NULL where the port does nothing about it. */
    const char *power;
    bool power_held;
} rtb_port_info;

#endif
