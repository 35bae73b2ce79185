/* SPDX-License-Identifier: Apache-2.0 */
/* THR-B-NEW: creation semantics. The calling thread, at priority p on the
 * measurement CPU, creates threads there and watches when they run (each
 * new thread only takes a ticket from a shared counter):
 *   lower_waits          a p-1 thread does not run before its creator
 *                        blocks, and does run once it has;
 *   equal_tail           of two p threads created in turn, neither runs
 *                        before the creator blocks, then the first created
 *                        runs first: a new thread joins the tail;
 *   equal_runs_on_yield  a p thread does not run until the creator yields,
 *                        and runs when it does;
 *   higher_preempts      a p+1 thread has run by the time create returns.
 * Each is repeated `repeats` times; one wrong repetition fails it. */
#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "repeats", .help = "repetitions of each check", .def = {20}, .ndef = 1, .min = 1,
     .max = 100000},
};

#define UNSEEN 0 /* tickets start at 1 */
#define SPIN_NS 200000

typedef struct probe {
    atomic_int *next_ticket;
    atomic_int ticket; /* when it ran, in order; UNSEEN until then */
} probe;

static void newborn(void *arg)
{
    probe *p = arg;
    atomic_store(&p->ticket, atomic_fetch_add(p->next_ticket, 1));
}

/* Keeps the CPU without blocking or yielding: a thread that may not run
 * yet gets every chance to show that it would. */
static void spin(void)
{
    rtb_time until = rtb_clock_now() + SPIN_NS;
    while (rtb_clock_now() < until)
        ;
}

typedef struct world {
    rtb_ctx *ctx;
    atomic_int next_ticket;
    int p;
} world;

static int spawn(world *w, rtb_thread *t, probe *pr, int offset)
{
    rtb_thread_attr a = rtb_attr(w->ctx, "b-new", 0);
    a.priority = w->p + offset;
    *pr = (probe){.next_ticket = &w->next_ticket};
    return rtb_thread_create(t, &a, newborn, pr);
}

/* Each returns 1 pass, 0 fail, -1 could not run; `why` says what broke. */
static int lower_waits(world *w, const char **why)
{
    rtb_thread t;
    probe pr;
    if (spawn(w, &t, &pr, -1) != RTB_OK)
        return -1;
    spin();
    rtb_thread_yield();
    bool early = atomic_load(&pr.ticket) != UNSEEN;
    rtb_thread_join(&t, w->ctx->deadline); /* blocks: now it may run */
    bool ran = atomic_load(&pr.ticket) != UNSEEN;
    *why = early ? "the new thread ran before its creator blocked"
           : !ran ? "the new thread did not run when its creator blocked" : "";
    return !early && ran;
}

static int equal_tail(world *w, const char **why)
{
    rtb_thread t[2];
    probe pr[2];
    if (spawn(w, &t[0], &pr[0], 0) != RTB_OK)
        return -1;
    if (spawn(w, &t[1], &pr[1], 0) != RTB_OK) {
        rtb_thread_join(&t[0], w->ctx->deadline);
        return -1;
    }
    spin();
    bool early = atomic_load(&pr[0].ticket) != UNSEEN || atomic_load(&pr[1].ticket) != UNSEEN;
    rtb_thread_join(&t[0], w->ctx->deadline);
    rtb_thread_join(&t[1], w->ctx->deadline);
    int a = atomic_load(&pr[0].ticket), b = atomic_load(&pr[1].ticket);
    bool in_order = a != UNSEEN && b != UNSEEN && a < b;
    *why = early ? "the new threads ran before their creator blocked"
           : !in_order ? "the later-created thread ran first" : "";
    return !early && in_order;
}

static int equal_runs_on_yield(world *w, const char **why)
{
    rtb_thread t;
    probe pr;
    if (spawn(w, &t, &pr, 0) != RTB_OK)
        return -1;
    spin();
    bool early = atomic_load(&pr.ticket) != UNSEEN;
    rtb_thread_yield();
    bool ran = atomic_load(&pr.ticket) != UNSEEN;
    rtb_thread_join(&t, w->ctx->deadline);
    *why = early ? "the new thread ran before its creator yielded"
           : !ran ? "the new thread did not run when its creator yielded" : "";
    return !early && ran;
}

static int higher_preempts(world *w, const char **why)
{
    rtb_thread t;
    probe pr;
    if (spawn(w, &t, &pr, 1) != RTB_OK)
        return -1;
    bool ran = atomic_load(&pr.ticket) != UNSEEN;
    rtb_thread_join(&t, w->ctx->deadline);
    *why = ran ? "" : "the new thread had not run when create returned";
    return ran;
}

static rtb_result run(rtb_ctx *ctx)
{
    static const struct {
        const char *name;
        int (*fn)(world *, const char **);
        bool equal; /* needs two threads of one priority */
    } checks[] = {
        {"lower_waits", lower_waits, false},
        {"equal_tail", equal_tail, true},
        {"equal_runs_on_yield", equal_runs_on_yield, true},
        {"higher_preempts", higher_preempts, false},
    };
    const int nchecks = (int)(sizeof checks / sizeof checks[0]);
    if (!ctx->port->realtime) {
        const char *names[sizeof checks / sizeof checks[0]];
        for (int c = 0; c < nchecks; c++)
            names[c] = checks[c].name;
        rtb_checks_need_realtime(ctx, names, nchecks,
                                 "without it the scheduler does not order threads by priority");
        return RTB_SKIPPED;
    }
    /* The creator sets its own priority: an injected creation fault then
     * shifts only the threads it creates. */
    int p = ctx->opt->priority;
    world w = {.ctx = ctx, .p = p < 2 ? 2 : p > RTB_PRIO_MAX - 3 ? RTB_PRIO_MAX - 3 : p};
    atomic_init(&w.next_ticket, 1);
    rtb_thread_self_set(w.p, ctx->opt->cpu);
    int64_t repeats = rtb_param(ctx, "repeats");
    rtb_result r = RTB_PASSED;
    for (int c = 0; c < nchecks; c++) {
        if (checks[c].equal && ctx->port->one_task_per_priority) {
            /* A kernel of one task per priority (uC/OS-II): cannot apply. */
            rtb_emit_check_skip(ctx, checks[c].name, "%s", ctx->port->one_task_detail);
            continue;
        }
        int64_t passed = 0, failed = 0;
        const char *why = "", *first_why = "";
        for (int64_t i = 0; i < repeats; i++) {
            int v = checks[c].fn(&w, &why);
            if (v < 0) {
                rtb_emit_check_error(ctx, checks[c].name, "could not create a thread");
                return RTB_ERROR;
            }
            if (v)
                passed++;
            else if (failed++ == 0)
                first_why = why;
        }
        rtb_emit_check(ctx, checks[c].name, failed == 0,
                       "creator at %d: %lld of %lld repetitions right%s%s", w.p,
                       (long long)passed, (long long)repeats, failed ? "; first wrong one: " : "",
                       first_why);
        if (failed)
            r = RTB_FAILED;
    }
    return r;
}

const rtb_case rtb_case_thr_b_new = {
    .id = "THR-B-NEW",
    .title = "Creation semantics: where a new thread goes in the ready queue",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
