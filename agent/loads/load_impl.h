/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the loads: what the engine (posix_load.c) shares with the kinds. */
#ifndef RTB_LOAD_IMPL_H
#define RTB_LOAD_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "load.h"

typedef struct load_param {
    const char *name, *help;
    int64_t def, min, max;
} load_param;

typedef struct load_worker {
    struct rtb_load *load;
    int id, cpu;
    _Atomic uint64_t ops;
    atomic_bool in_io; /* inside a write or fsync, which a slow disk may hold up */
    rtb_thread th;
} load_worker;

typedef struct load_kind {
    const char *name;
    const char *unit; /* what a worker's ops count */
    const char *what; /* one line for --help */
    const load_param *params;
    int nparams;
    bool needs_dir;   /* gets a private temporary folder (l->dir) */
    /* The thread body: sets itself up, calls load_ready() (or load_fail()
     * and returns), loops until load_stopping(), cleans up after itself. */
    void (*run)(load_worker *w);
    /* Instead of threads (stress): start and stop by itself. */
    int (*start)(struct rtb_load *l, const rtb_load_place *place, char *err, size_t errcap);
    void (*stop)(struct rtb_load *l, rtb_time deadline);
    /* Before the load threads, on the caller's thread: a check of the
     * spec that needs the OS (stress-ng installed?). */
    int (*validate)(const rtb_load_spec *spec, char *err, size_t errcap);
} load_kind;

struct rtb_load {
    rtb_load_spec spec;
    atomic_bool stop;
    atomic_int ready, failed;
    char fail_msg[160];
    int n, started, priority;
    rtb_time start_ns; /* how long its threads took to run */
    rtb_time stopped_late_ns; /* rtb_load_stats' */
    int cpus[64], ncpus; /* for the description */
    char dir[160];
    bool have_dir;
    load_worker *w;
    /* stress */
    int pid;
    uint64_t child_ms;
};

extern const load_kind load_kind_cpu, load_kind_memory, load_kind_kernel, load_kind_io,
    load_kind_irq, load_kind_stress;
extern const load_kind *const load_kinds[];
extern const int load_nkinds;

static inline bool load_stopping(const load_worker *w)
{
    return atomic_load_explicit(&w->load->stop, memory_order_relaxed);
}
static inline void load_count(load_worker *w, uint64_t n)
{
    atomic_fetch_add_explicit(&w->ops, n, memory_order_relaxed);
}
/* Around a call that waits for the disk: stopping waits longer for it. */
static inline void load_in_io(load_worker *w, bool in)
{
    atomic_store_explicit(&w->in_io, in, memory_order_relaxed);
}
static inline int64_t load_value(const load_worker *w, int i) { return w->load->spec.v[i]; }

void load_ready(load_worker *w);
void load_fail(load_worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A helper thread with the worker's priority and CPU (kernel: the echo). */
int load_helper(load_worker *w, rtb_thread *th, rtb_thread_fn fn, void *arg);
/* stress-ng's options as they will be used (the default when none given). */
const char *load_stress_args(const rtb_load_spec *s);
/* $TMPDIR, or /tmp. */
const char *load_tmp_base(void);
/* Removes a folder and everything in it. */
void load_remove_tree(const char *path);

#endif
