/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Background loads: work that keeps the OS busy while a case measures.
 * Loads are an optional part of a port (RTB_PORT_HAS_LOADS): a load calls
 * the OS directly, so each port brings its own (POSIX: agent/loads). The
 * runner and the cases see only this interface; on a port without loads
 * every call answers RTB_ENOTSUP (core/load_none.c) and the case says
 * "unsupported: this port has no loads". Load threads stop when asked, and
 * whoever started a load stops it on every path out, error paths included.
 * docs/loads.md describes the POSIX kinds, their parameters and what they
 * stress; agent/loads/load.h has the POSIX port's own parsing and help.
 */
#ifndef RTB_RTB_LOAD_H
#define RTB_RTB_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rtb/port.h"

typedef struct rtb_load rtb_load;
struct load_kind;

#define RTB_LOAD_MAX_KINDS 8
#define RTB_LOAD_MAX_PARAMS 4
#define RTB_LOAD_ARGS 512

/* One kind of load, as parsed from a spec. */
typedef struct rtb_load_spec {
    const struct load_kind *kind;
    int threads;  /* -1: the placement's default */
    int priority; /* 0: normal scheduling (SCHED_OTHER); 1..97: real-time */
    int64_t v[RTB_LOAD_MAX_PARAMS]; /* the kind's own parameters, by its table */
    char args[RTB_LOAD_ARGS];       /* stress: stress-ng options */
} rtb_load_spec;

/* Where a load's threads go. */
typedef struct rtb_load_place {
    const int *cpus; /* threads are pinned round-robin over these */
    int ncpus;       /* 0: not pinned */
    int threads;     /* threads of a kind whose spec says -1 */
    int64_t max_ms;  /* stress: stress-ng's own --timeout, a safety net */
    /* Return once the threads exist, without waiting for them to run: a
     * case's own load below it on its CPU runs only when the case lets it. */
    bool no_wait;
} rtb_load_place;

typedef struct rtb_load_stats {
    int threads;
    uint64_t ops_total; /* units of work all threads completed */
    uint64_t ops_min;   /* the least any one thread completed (0: one never ran) */
    const char *unit;   /* what ops count, e.g. "system calls" */
    /* > 0: how long past the deadline its last thread took to stop, held up
     * in the kernel (an fsync behind a slow disk): the machine, not a hang. */
    rtb_time stopped_late_ns;
} rtb_load_stats;

/* The background load of a whole run (every case runs under it), as the
 * port's entry point parsed and validated it. */
typedef struct rtb_load_plan {
    const char *text; /* as given: "mixed", "cpu:prio=90,io" */
    rtb_load_spec specs[RTB_LOAD_MAX_KINDS];
    int n;
    int cpus[RTB_MAX_CPUS], ncpus; /* where load threads go */
    char cpus_text[256];
    int threads; /* per kind; 0: one per load CPU */
} rtb_load_plan;

const char *rtb_load_kind_name(const rtb_load_spec *spec);

/* Starts one kind; returns once every thread is running (or failed), and
 * counts work from then on. On failure nothing is left running, *out is
 * NULL and `err` says why. */
int rtb_load_begin(rtb_load **out, const rtb_load_spec *spec, const rtb_load_place *place,
                   char *err, size_t errcap);
/* Stops and joins, waiting until `deadline` (rtb_clock_now() clock), and
 * releases everything. NULL is a no-op. `st` may be NULL. RTB_ETIMEDOUT:
 * a thread did not stop (its memory is deliberately kept). */
int rtb_load_stop(rtb_load *l, rtb_time deadline, rtb_load_stats *st);
/* How long rtb_load_begin waited for every thread to run (ns). */
rtb_time rtb_load_start_ns(const rtb_load *l);
/* A one-line description for check details: "2 threads (SCHED_OTHER) on
 * CPUs 0,1". */
void rtb_load_describe(const rtb_load *l, char *buf, size_t cap);

/* The cases' form: `n` "kernel" threads pinned to `cpu` (-1: any) at
 * real-time `priority` (0: normal), not waited for (no_wait). n == 0
 * starts nothing, *out = NULL. */
int rtb_load_start(rtb_load **out, const char *kind, int n, int cpu, int priority, char *err,
                   size_t errcap);
/* Whether rtb_load_start could start such a load here, asked before a
 * case sets anything up: RTB_ENOTSUP with the reason rtb_load_start would
 * give (the case is then unsupported holding no RAM, a board's 64 KiB),
 * else RTB_OK (starting it may still fail, and says why). */
int rtb_load_check(const char *kind, int n, char *err, size_t errcap);

#endif
