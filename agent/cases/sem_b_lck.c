/* SPDX-License-Identifier: Apache-2.0 */
/* SEM-B-LCK: counting semaphore semantics. A take blocks only at count 0,
 * a give increments, and a give at 0 with a higher-priority waiter switches
 * to the waiter before it returns. Checks, not times. */
#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "count", .help = "initial count for the take-until-zero check", .def = {3},
     .ndef = 1, .min = 1, .max = 1000},
    {.name = "rounds", .help = "block/give rounds with a higher-priority waiter", .def = {10},
     .ndef = 1, .min = 1, .max = 100000},
};

/* Try-takes until one fails; returns how many succeeded (bounded by `cap`,
 * so a take that never fails cannot loop forever) and the failing code. */
static int64_t drain(rtb_sem *s, int64_t cap, int *last)
{
    int64_t ok = 0;
    *last = RTB_OK;
    while (ok <= cap) {
        *last = rtb_sem_take(s, 0);
        if (*last != RTB_OK)
            break;
        ok++;
    }
    return ok;
}

typedef struct lck {
    rtb_ctx *ctx;
    rtb_sem s;
    int64_t rounds;
    atomic_llong tried; /* takes the waiter has started */
    atomic_llong woke;  /* takes the waiter has completed */
} lck;

static void waiter(void *arg)
{
    lck *x = arg;
    for (int64_t r = 0; r < x->rounds; r++) {
        atomic_store(&x->tried, r + 1);
        if (rtb_sem_take(&x->s, x->ctx->deadline) != RTB_OK)
            return;
        atomic_store(&x->woke, r + 1);
    }
}

/* The waiter outranks the controller on one CPU, so under strict priority
 * scheduling every observation below is exact, not a race. */
static rtb_result waiter_checks(rtb_ctx *ctx, int64_t rounds)
{
    static const char *const names[] = {"blocks_at_zero", "give_wakes_waiter",
                                        "waiter_consumes"};
    if (!rtb_checks_need_realtime(ctx, names, 3, "the waiter must preempt the giver"))
        return RTB_SKIPPED;
    lck x = {.ctx = ctx, .rounds = rounds};
    if (rtb_sem_create(&x.s, 0) != RTB_OK) {
        rtb_emit_check_error(ctx, "waiter", "could not create the semaphore");
        return RTB_ERROR;
    }
    /* At --priority 97 the waiter would be clamped to the controller's level. */
    int low = ctx->opt->priority > RTB_PRIO_MAX - 3 ? -1 : 0;
    rtb_thread_attr ctl = rtb_attr(ctx, "lck-ctl", low), hi = rtb_attr(ctx, "lck-waiter", low + 1);
    rtb_thread_self_set(ctl.priority, ctx->opt->cpu);
    rtb_thread th;
    if (rtb_thread_create(&th, &hi, waiter, &x) != RTB_OK) {
        rtb_sem_delete(&x.s);
        rtb_emit_check_error(ctx, "waiter", "could not create the waiter thread");
        return RTB_ERROR;
    }
    int64_t not_blocked = 0, not_woken = 0, left_count = 0;
    for (int64_t r = 0; r < rounds; r++) {
        /* The waiter ran at once and must now sit in its take at count 0. */
        if (atomic_load(&x.tried) != r + 1 || atomic_load(&x.woke) != r)
            not_blocked++;
        rtb_sem_give(&x.s);
        /* The give must have switched to the waiter and let it finish. */
        if (atomic_load(&x.woke) != r + 1)
            not_woken++;
        /* The waiter consumed the unit: the count is back to 0. */
        if (rtb_sem_take(&x.s, 0) == RTB_OK)
            left_count++;
    }
    int rc = rtb_join_all(ctx, &th, 1);
    rtb_sem_delete(&x.s);
    rtb_emit_check(ctx, names[0], not_blocked == 0,
                   "a higher-priority take at count 0 did not block in %lld of %lld rounds",
                   (long long)not_blocked, (long long)rounds);
    rtb_emit_check(ctx, names[1], not_woken == 0,
                   "give returned before the higher-priority waiter ran in %lld of %lld rounds",
                   (long long)not_woken, (long long)rounds);
    rtb_emit_check(ctx, names[2], left_count == 0,
                   "a unit was left after the waiter's take in %lld of %lld rounds",
                   (long long)left_count, (long long)rounds);
    if (rc != RTB_OK)
        return RTB_ERROR;
    return not_blocked || not_woken || left_count ? RTB_FAILED : RTB_PASSED;
}

static rtb_result run(rtb_ctx *ctx)
{
    int64_t count = rtb_param(ctx, "count");
    rtb_sem s;
    if (rtb_sem_create(&s, (unsigned)count) != RTB_OK) {
        rtb_emit_check_error(ctx, "take_until_zero", "could not create the semaphore");
        return RTB_ERROR;
    }
    int last;
    int64_t got = drain(&s, count, &last);
    bool ok1 = got == count && last == RTB_EAGAIN;
    rtb_emit_check(ctx, "take_until_zero", ok1,
                   "created at %lld: %lld non-blocking takes succeeded, then code %d (want %lld, "
                   "then RTB_EAGAIN %d)",
                   (long long)count, (long long)got, last, (long long)count, RTB_EAGAIN);
    for (int64_t i = 0; i < count; i++)
        rtb_sem_give(&s);
    got = drain(&s, count, &last);
    bool ok2 = got == count && last == RTB_EAGAIN;
    rtb_emit_check(ctx, "give_increments", ok2,
                   "%lld gives at 0: %lld non-blocking takes succeeded, then code %d",
                   (long long)count, (long long)got, last);
    rtb_sem_delete(&s);

    rtb_result r = waiter_checks(ctx, rtb_param(ctx, "rounds"));
    if (r == RTB_ERROR)
        return RTB_ERROR;
    /* The checks that ran decide; skipped ones only say they could not apply. */
    return ok1 && ok2 && r != RTB_FAILED ? RTB_PASSED : RTB_FAILED;
}

const rtb_case rtb_case_sem_b_lck = {
    .id = "SEM-B-LCK",
    .title = "Counting semaphore semantics",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
