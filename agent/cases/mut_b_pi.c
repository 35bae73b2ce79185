/* SPDX-License-Identifier: Apache-2.0 */
/* MUT-B-PI: priority-inversion avoidance. Low (p) holds the mutex, medium
 * (p+1) is busy on the CPU, high (p+2) asks for the mutex; all three on the
 * measurement CPU. With priority inheritance low runs at high's priority,
 * releases, and high has the mutex before medium runs again. The same
 * scenario with a plain mutex is the case's own negative control: medium
 * must be seen running while high waits, or the method cannot see an
 * inversion and the PI verdict proves nothing. */

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "rounds", .help = "scenarios per mutex kind", .def = {3}, .ndef = 1, .min = 1,
     .max = 10000},
    {.name = "hold_us", .help = "how long medium keeps the CPU once it has it", .def = {1000},
     .ndef = 1, .min = 1, .max = 100000},
};

typedef struct pi_round {
    rtb_ctx *ctx;
    rtb_mutex m;
    rtb_sem go_med, go_high;
    rtb_time hold;
    atomic_bool got;          /* high has the mutex: medium stops at once */
    bool low_locked, high_locked;
    rtb_stamp t_req, t_got;   /* high: asks for the mutex, has it */
    rtb_stamp t_med;          /* medium: back on the CPU after high asked */
    rtb_stamp t_low;          /* low: running again while it holds the mutex */
} pi_round;

static void high_fn(void *arg)
{
    pi_round *r = arg;
    if (rtb_sem_take(&r->go_high, r->ctx->deadline) != RTB_OK)
        return;
    r->t_req = rtb_stamp_now();
    if (rtb_mutex_lock(&r->m) != RTB_OK)
        return;
    r->t_got = rtb_stamp_now();
    r->high_locked = true;
    atomic_store(&r->got, true);
    rtb_mutex_unlock(&r->m);
}

static void medium_fn(void *arg)
{
    pi_round *r = arg;
    int rc = rtb_sem_take(&r->go_med, r->ctx->deadline);
    rtb_sem_give(&r->go_high); /* high preempts here and asks for the mutex */
    if (rc != RTB_OK)
        return;
    r->t_med = rtb_stamp_now();
    if (atomic_load(&r->got))
        return;
    /* On the CPU while high waits: the inversion. Keep it a while, so that
     * it shows in high's wait, but never for long. */
    rtb_time until = rtb_clock_now() + r->hold;
    while (!atomic_load_explicit(&r->got, memory_order_relaxed) && rtb_clock_now() < until)
        ;
}

static void low_fn(void *arg)
{
    pi_round *r = arg;
    r->low_locked = rtb_mutex_lock(&r->m) == RTB_OK;
    rtb_sem_give(&r->go_med); /* medium preempts; low comes back by inheritance or last */
    r->t_low = rtb_stamp_now();
    if (r->low_locked)
        rtb_mutex_unlock(&r->m);
}

typedef struct tally {
    int rounds, invalid, inverted;
    rtb_time max_wait;
} tally;

/* One scenario; false if it could not be set up. */
static bool scenario(rtb_ctx *ctx, unsigned flags, rtb_time hold, tally *t)
{
    pi_round r = {.ctx = ctx, .hold = hold};
    rtb_thread th[3];
    if (rtb_mutex_create(&r.m, flags) != RTB_OK)
        return false;
    rtb_sem_create(&r.go_med, 0);
    rtb_sem_create(&r.go_high, 0);
    rtb_thread_attr al = rtb_attr(ctx, "pi-low", 0), am = rtb_attr(ctx, "pi-med", 1),
                    ah = rtb_attr(ctx, "pi-high", 2);
    /* The creator outranks all three: they start in priority order once it
     * blocks in the join, high and medium to wait, low to take the mutex. */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    int n = 0;
    if (rtb_thread_create(&th[n], &ah, high_fn, &r) == RTB_OK)
        n++;
    if (n == 1 && rtb_thread_create(&th[n], &am, medium_fn, &r) == RTB_OK)
        n++;
    if (n == 2 && rtb_thread_create(&th[n], &al, low_fn, &r) == RTB_OK)
        n++;
    if (n < 3) { /* release whoever waits */
        rtb_sem_give(&r.go_med);
        rtb_sem_give(&r.go_high);
    }
    int rc = rtb_join_all(ctx, th, n);
    rtb_sem_delete(&r.go_med);
    rtb_sem_delete(&r.go_high);
    rtb_mutex_delete(&r.m);
    t->rounds++;
    if (n < 3 || rc != RTB_OK || !r.low_locked || !r.high_locked || !r.t_med || !r.t_low) {
        t->invalid++;
        return false;
    }
    if (r.t_med > r.t_req && r.t_med < r.t_got)
        t->inverted++;
    if (rtb_stamp_ns(r.t_got - r.t_req) > t->max_wait)
        t->max_wait = rtb_stamp_ns(r.t_got - r.t_req);
    return true;
}

static const char *describe(char *buf, size_t cap, const char *kind, const tally *t)
{
    snprintf(buf, cap,
             "%s medium ran while high waited in %d of %d rounds (%d could not be set "
             "up); high waited up to %lld ns",
             kind, t->inverted, t->rounds - t->invalid, t->invalid, (long long)t->max_wait);
    return buf;
}

static rtb_result run(rtb_ctx *ctx)
{
    int64_t rounds = rtb_param(ctx, "rounds");
    rtb_time hold = rtb_param(ctx, "hold_us") * 1000;
    tally plain = {0}, pi = {0};
    /* Alternate, so that a disturbance of the machine hits both kinds. */
    for (int64_t i = 0; i < rounds; i++) {
        scenario(ctx, 0, hold, &plain);
        scenario(ctx, RTB_MUTEX_PI, hold, &pi);
    }
    char dc[384], dp[384];
    describe(dc, sizeof dc, "plain mutex:", &plain);
    /* The kernel's own protocol for an RTB_MUTEX_PI mutex: a ceiling is
     * never reported as inheritance. */
    const char *proto = ctx->port->mutex_protocol[0] ? ctx->port->mutex_protocol
                                                     : "priority inheritance";
    char kind[200];
    snprintf(kind, sizeof kind, "inversion-safe mutex (%s):", proto);
    describe(dp, sizeof dp, kind, &pi);
    if (!ctx->port->realtime) {
        rtb_emit_check_skip(ctx, "control", "needs real-time priority (%s); saw: %s",
                            ctx->port->rt_detail, dc);
        rtb_emit_check_skip(ctx, "pi", "needs real-time priority (%s); saw: %s",
                            ctx->port->rt_detail, dp);
        return RTB_SKIPPED;
    }
    if (plain.invalid || pi.invalid) {
        rtb_emit_check_error(ctx, "control", "the scenario could not be set up: %s", dc);
        rtb_emit_check_error(ctx, "pi", "the scenario could not be set up: %s", dp);
        return RTB_ERROR;
    }
    bool control = plain.inverted == plain.rounds;
    bool ok = pi.inverted == 0;
    rtb_emit_check(ctx, "control", control, "%s%s", dc,
                   control ? "" : " (expected in every round: the method cannot see an inversion)");
    rtb_emit_check(ctx, "pi", ok, "%s%s", dp,
                   control ? ""
                           : "; untrusted: the plain-mutex control showed no inversion, so this "
                             "method may not see one");
    return control && ok ? RTB_PASSED : RTB_FAILED;
}

const rtb_case rtb_case_mut_b_pi = {
    .id = "MUT-B-PI",
    .title = "Priority-inversion avoidance (PI mutex vs plain mutex)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
