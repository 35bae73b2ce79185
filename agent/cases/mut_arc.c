/* SPDX-License-Identifier: Apache-2.0 */
/* MUT-ARC: lock / unlock under inversion, MUT-B-PI in a loop. Low (p) locks
 * a PI mutex and wakes medium (p+1), which wakes high (p+2); high asks for
 * the mutex. Acquisition = high's lock request until the low owner runs
 * (it inherited high's priority, so it runs before medium); release = the
 * owner's unlock until high runs with the mutex. All on one CPU.
 * The stamps are kept a block of iterations at a time (rtb_stamp_block: all
 * of them on POSIX, 128 on a board): low turns a block into samples at the
 * top of its next iteration, before it takes the mutex, when high and
 * medium (above it) wait for their next wake-up, as at the start. */
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "inversions timed", .def = {1000}, .ndef = 1, .min = 1,
     .max = 10000000},
};

typedef struct arc {
    rtb_ctx *ctx;
    rtb_mutex m;
    rtb_sem go_med, go_high;
    size_t n, blk;       /* iterations, in a block of stamps */
    atomic_size_t cur;   /* the iteration low is in, in its block: set before it wakes the others */
    atomic_bool done;
    size_t completed, taken; /* iterations low completed, turned into samples */
    size_t medium_first, skipped;
    rtb_series *acq, *rel;
    rtb_stamp *t_req, *t_got; /* high: lock request, has the mutex */
    rtb_stamp *t_own, *t_unl; /* low: runs again as owner, unlocks */
    rtb_stamp *t_med;         /* medium: back on the CPU */
} arc;

/* An iteration measures an inversion only if high asked before the owner
 * ran again: those are timed (docs/cases.md), whether or not the owner then
 * ran before medium got the CPU back; one where medium ran first is a
 * failed inheritance, timed as it happened, and fails the check. Without
 * real-time priority neither is certain. The block's stamps are cleared
 * for the next one (an unset stamp is an iteration not set up). */
static void take_block(arc *x)
{
    size_t m = x->completed - x->taken;
    for (size_t i = 0; i < m; i++) {
        if (!x->t_req[i] || !x->t_got[i] || x->t_req[i] > x->t_own[i]) {
            x->skipped++;
            continue;
        }
        rtb_series_push(x->acq, rtb_stamp_ns(x->t_own[i] - x->t_req[i]));
        rtb_series_push(x->rel, rtb_stamp_ns(x->t_got[i] - x->t_unl[i]));
        rtb_series_drain(x->acq); /* between iterations: nothing is measured */
        rtb_series_drain(x->rel);
        if (x->t_got[i] > x->t_med[i])
            x->medium_first++;
    }
    rtb_stamp **bufs[] = {&x->t_req, &x->t_got, &x->t_own, &x->t_unl, &x->t_med};
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++)
        memset(*bufs[b], 0, x->blk * sizeof(rtb_stamp));
    x->taken = x->completed;
}

static void low_fn(void *arg)
{
    arc *x = arg;
    for (size_t i = 0; i < x->n && !atomic_load(&x->ctx->stop); i++) {
        size_t k = i % x->blk;
        if (k == 0 && i > 0) /* high and medium wait for their next wake-up */
            take_block(x);
        if (rtb_mutex_lock(&x->m) != RTB_OK)
            break;
        atomic_store(&x->cur, k);
        rtb_sem_give(&x->go_med); /* medium, then high, run from here */
        x->t_own[k] = rtb_stamp_now();
        x->t_unl[k] = rtb_stamp_now();
        rtb_mutex_unlock(&x->m);
        x->completed = i + 1;
    }
    atomic_store(&x->done, true);
    rtb_sem_give(&x->go_med);
}

static void medium_fn(void *arg)
{
    arc *x = arg;
    while (rtb_sem_take(&x->go_med, x->ctx->deadline) == RTB_OK && !atomic_load(&x->done)) {
        size_t i = atomic_load(&x->cur);
        rtb_sem_give(&x->go_high); /* high preempts and asks for the mutex */
        x->t_med[i] = rtb_stamp_now();
    }
    atomic_store(&x->done, true);
    rtb_sem_give(&x->go_high);
}

static void high_fn(void *arg)
{
    arc *x = arg;
    while (rtb_sem_take(&x->go_high, x->ctx->deadline) == RTB_OK && !atomic_load(&x->done)) {
        size_t i = atomic_load(&x->cur);
        x->t_req[i] = rtb_stamp_now();
        if (rtb_mutex_lock(&x->m) != RTB_OK)
            break;
        x->t_got[i] = rtb_stamp_now();
        rtb_mutex_unlock(&x->m);
    }
    atomic_store(&x->done, true);
}

static rtb_result measure(rtb_ctx *ctx, arc *x)
{
    if (rtb_mutex_create(&x->m, RTB_MUTEX_PI) != RTB_OK) {
        rtb_emit_check_error(ctx, "mutex", "cannot create a priority-inheritance mutex");
        return RTB_ERROR;
    }
    rtb_sem_create(&x->go_med, 0);
    rtb_sem_create(&x->go_high, 0);
    rtb_thread th[3];
    rtb_thread_attr ah = rtb_attr(ctx, "arc-high", 2), am = rtb_attr(ctx, "arc-med", 1),
                    al = rtb_attr(ctx, "arc-low", 0);
    /* The creator outranks them: high and medium start waiting before low
     * takes the mutex for the first time. */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    int n = 0;
    if (rtb_thread_create(&th[n], &ah, high_fn, x) == RTB_OK)
        n++;
    if (n == 1 && rtb_thread_create(&th[n], &am, medium_fn, x) == RTB_OK)
        n++;
    if (n == 2 && rtb_thread_create(&th[n], &al, low_fn, x) == RTB_OK)
        n++;
    if (n < 3) {
        atomic_store(&x->done, true);
        rtb_sem_give(&x->go_med);
        rtb_sem_give(&x->go_high);
    }
    int rc = rtb_join_all(ctx, th, n);
    rtb_sem_delete(&x->go_med);
    rtb_sem_delete(&x->go_high);
    rtb_mutex_delete(&x->m);
    if (n < 3 || rc != RTB_OK) {
        rtb_emit_check_error(ctx, "threads", "the three threads could not be run (%d created)",
                             n);
        return RTB_ERROR;
    }
    take_block(x); /* the last one, after the threads */
    size_t medium_first = x->medium_first, skipped = x->skipped;
    /* Named after the kernel's protocol: a ceiling is never reported as
     * inheritance (uC/OS-II). */
    const char *check = ctx->port->mutex_protocol[0] ? "ceiling" : "inheritance";
    if (!ctx->port->realtime) {
        rtb_emit_check_skip(ctx, check,
                            "needs real-time priority (%s); of %llu iterations %llu were "
                            "not set up and medium ran first in %llu", ctx->port->rt_detail,
                            (unsigned long long)x->completed, (unsigned long long)skipped,
                            (unsigned long long)medium_first);
        return RTB_SKIPPED;
    }
    bool ok = medium_first == 0 && skipped == 0 && x->completed == x->n;
    rtb_emit_check(ctx, check, ok,
                   "%llu of %llu iterations done, %llu not set up; medium ran before the owner "
                   "released in %llu%s%s", (unsigned long long)x->completed,
                   (unsigned long long)x->n, (unsigned long long)skipped,
                   (unsigned long long)medium_first,
                   ctx->port->mutex_protocol[0] ? "; the kernel's protocol: " : "",
                   ctx->port->mutex_protocol);
    return ok ? RTB_PASSED : RTB_FAILED;
}

static rtb_result run(rtb_ctx *ctx)
{
    arc x = {.ctx = ctx, .n = (size_t)rtb_param(ctx, "iterations")};
    x.blk = rtb_stamp_block(x.n);
    rtb_stamp **bufs[] = {&x.t_req, &x.t_got, &x.t_own, &x.t_unl, &x.t_med};
    bool mem = true;
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++) {
        mem = (*bufs[b] = rtb_mem_calloc(x.blk, sizeof(rtb_stamp))) != NULL && mem;
        if (*bufs[b]) /* fault it in now: stamps are stored inside the samples */
            memset(*bufs[b], 0, x.blk * sizeof(rtb_stamp));
    }
    size_t cap = x.n < ctx->opt->max_samples ? x.n : ctx->opt->max_samples;
    rtb_series acq, rel;
    x.acq = &acq;
    x.rel = &rel;
    mem = rtb_series_init_streamed(&acq, ctx, "acquire", cap) == RTB_OK && mem;
    mem = rtb_series_init_streamed(&rel, ctx, "release", cap) == RTB_OK && mem;
    rtb_result r;
    if (!mem) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu iterations",
                             (unsigned long long)x.n);
        r = RTB_ERROR;
    } else {
        r = measure(ctx, &x);
        rtb_emit_series(ctx, &acq);
        rtb_emit_series(ctx, &rel);
    }
    rtb_series_free(&acq);
    rtb_series_free(&rel);
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++)
        rtb_mem_free(*bufs[b]);
    return r;
}

const rtb_case rtb_case_mut_arc = {
    .id = "MUT-ARC",
    .title = "Mutex lock / unlock under inversion (priority inheritance, or the kernel's ceiling)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
