/* SPDX-License-Identifier: Apache-2.0 */
/* SEM-B-REL: release order. Waiters of distinct priorities block on one
 * semaphore in a shuffled order (fixed seed, so runs are comparable); each
 * give must wake the highest-priority waiter, so the wake order must be
 * descending priority. A FIFO-only semaphore wakes them in arrival order
 * and fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

#define MAX_WAITERS 32

static const rtb_param_def params[] = {
    {.name = "waiters", .help = "blocked threads of distinct priorities", .def = {8}, .ndef = 1,
     .min = 2, .max = MAX_WAITERS},
};

typedef struct rel rel;

typedef struct rel_waiter {
    rel *x;
    int prio;
    int arrival;  /* position in which it began its take */
    bool took;
} rel_waiter;

struct rel {
    rtb_ctx *ctx;
    rtb_sem s;
    atomic_int arrived, woken;
    int wake_prio[MAX_WAITERS];
};

static void waiter(void *arg)
{
    rel_waiter *w = arg;
    rel *x = w->x;
    w->arrival = atomic_fetch_add(&x->arrived, 1);
    if (rtb_sem_take(&x->s, x->ctx->deadline) != RTB_OK)
        return;
    w->took = true;
    x->wake_prio[atomic_fetch_add(&x->woken, 1)] = w->prio;
}

/* A fixed-seed Fisher-Yates shuffle; the highest priority never arrives
 * first, so a FIFO semaphore cannot pass by luck. */
static void shuffle(int *order, int n)
{
    uint32_t seed = 42; /* for 8 waiters: rank correlation 0 with priority */
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 1664525u + 1013904223u;
        int j = (int)((seed >> 8) % (uint32_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    if (order[0] == n - 1) {
        order[0] = order[n - 1];
        order[n - 1] = n - 1;
    }
}

static size_t list_prios(char *buf, size_t cap, const int *prio, int n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? " " : "", prio[i]);
    return len;
}

static rtb_result release(rtb_ctx *ctx, int n, rel_waiter *w, rtb_thread *th, int *order)
{
    static const char *const names[] = {"release_order"};
    if (!rtb_checks_need_realtime(ctx, names, 1,
                                  "waiters must block in a set order and preempt the giver"))
        return RTB_SKIPPED;
    /* The controller sits just below its waiters; all stay within 1..97. */
    int ctl = ctx->opt->priority;
    if (ctl > RTB_PRIO_MAX - 2 - n)
        ctl = RTB_PRIO_MAX - 2 - n;
    rel x = {.ctx = ctx};
    if (rtb_sem_create(&x.s, 0) != RTB_OK) {
        rtb_emit_check_error(ctx, "release_order", "could not create the semaphore");
        return RTB_ERROR;
    }
    rtb_thread_self_set(ctl, ctx->opt->cpu);
    shuffle(order, n);
    int created = 0, arrival_prio[MAX_WAITERS];
    for (; created < n; created++) {
        int k = order[created];
        w[k] = (rel_waiter){.x = &x, .prio = ctl + 1 + k, .arrival = -1};
        rtb_thread_attr a = rtb_attr(ctx, "rel-waiter", w[k].prio - ctx->opt->priority);
        /* Higher than us: it runs at once and blocks before we go on. */
        if (rtb_thread_create(&th[created], &a, waiter, &w[k]) != RTB_OK)
            break;
        arrival_prio[created] = w[k].prio;
    }
    bool arrived_in_order = created == n;
    for (int i = 0; i < created; i++)
        if (w[order[i]].arrival != i)
            arrived_in_order = false;
    int early = atomic_load(&x.woken); /* woke with nothing given */
    for (int i = 0; i < created; i++)
        rtb_sem_give(&x.s);
    int rc = rtb_join_all(ctx, th, created);
    rtb_sem_delete(&x.s);

    char arr[256], woke[256];
    list_prios(arr, sizeof arr, arrival_prio, created);
    int nwoken = atomic_load(&x.woken);
    list_prios(woke, sizeof woke, x.wake_prio, nwoken);
    if (!arrived_in_order || rc != RTB_OK) {
        rtb_emit_check_error(ctx, "release_order",
                             "could not set up %d waiters in order (%d created); arrival "
                             "priorities: %s",
                             n, created, arr);
        return RTB_ERROR;
    }
    bool ok = nwoken == n && early == 0;
    for (int i = 0; ok && i < n; i++)
        ok = x.wake_prio[i] == ctl + n - i;
    rtb_emit_check(ctx, "release_order", ok,
                   "%d waiters blocked in priority order %s; gives woke %s (%d woke before any "
                   "give); want descending priority",
                   n, arr, woke, early);
    return ok ? RTB_PASSED : RTB_FAILED;
}

static rtb_result run(rtb_ctx *ctx)
{
    int n = (int)rtb_param(ctx, "waiters");
    /* From the case's memory, neither on the stack nor in static storage
     * (a board's RAM in every case). */
    rel_waiter *w = rtb_mem_calloc(MAX_WAITERS, sizeof *w);
    rtb_thread *th = rtb_mem_calloc(MAX_WAITERS, sizeof *th);
    int *order = rtb_mem_calloc(MAX_WAITERS, sizeof *order);
    rtb_result r = RTB_ERROR;
    if (w && th && order)
        r = release(ctx, n, w, th, order);
    else
        rtb_emit_check_error(ctx, "release_order", "no memory for %d waiters", n);
    rtb_mem_free(order);
    rtb_mem_free(th);
    rtb_mem_free(w);
    return r;
}

const rtb_case rtb_case_sem_b_rel = {
    .id = "SEM-B-REL",
    .title = "Semaphore release order: highest-priority waiter first",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
