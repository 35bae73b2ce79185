/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Background loads: threads that keep the OS busy while a case measures.
 * A load is port-specific (it calls the OS directly); a case sees only this
 * interface. Load threads stop when asked, and a case stops them on every
 * path out of it, error paths included.
 *
 * Kinds:
 *   "kernel"  loops over calls that take kernel locks or run with
 *             preemption disabled: file create/write/unlink in a private
 *             temporary folder, mmap/munmap, getpid/sched_yield, pipe
 *             write/read.
 */
#ifndef RTB_LOAD_H
#define RTB_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "rtb/port.h"

typedef struct rtb_load rtb_load;

typedef struct rtb_load_stats {
    int threads;
    uint64_t ops_total; /* operations all threads completed */
    uint64_t ops_min;   /* the least any one thread completed (0: one never ran) */
} rtb_load_stats;

/* Starts `n` threads of `kind` pinned to `cpu` at real-time `priority`
 * (the port's rules: normal priority when it has no real-time). n == 0
 * starts nothing and sets *out = NULL. On failure nothing is left running,
 * *out is NULL and `err` says why. */
int rtb_load_start(rtb_load **out, const char *kind, int n, int cpu, int priority, char *err,
                   size_t errcap);
/* Stops and joins the threads, waiting until `deadline` (rtb_clock_now()
 * clock), and releases everything. NULL is a no-op. `st` may be NULL.
 * RTB_ETIMEDOUT: a thread did not stop (its memory is deliberately kept). */
int rtb_load_stop(rtb_load *l, rtb_time deadline, rtb_load_stats *st);

#endif
