/* SPDX-License-Identifier: Apache-2.0 */
/* THR-LOCK: the cost of locking and unlocking the scheduler (an RTOS task
 * lock, e.g. vTaskSuspendAll around a critical section), where the port
 * says the OS has one (rtb_port_info.sched_lock); elsewhere the case is
 * unsupported with the port's reason, rather than timing a stand-in that
 * means something else.
 *
 * The lock must hold: a higher-priority thread readied inside the locked
 * section (a give it waits for) must not run before the unlock. */
#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "count", .help = "lock / unlock pairs timed", .def = {10000}, .ndef = 1, .min = 10,
     .max = 10000000},
    {.name = "rounds", .help = "rounds of the lock_holds check", .def = {10}, .ndef = 1,
     .min = 1, .max = 1000},
};

typedef struct hold {
    rtb_ctx *ctx;
    rtb_sem go;
    atomic_int woke; /* rounds in which the waiter ran */
    atomic_bool quit;
} hold;

static void waiter(void *arg)
{
    hold *h = arg;
    while (rtb_sem_take(&h->go, h->ctx->deadline) == RTB_OK && !atomic_load(&h->quit))
        atomic_fetch_add(&h->woke, 1);
}

/* A give to a higher-priority waiter inside the locked section: the waiter
 * runs only after the unlock. */
static bool check_holds(rtb_ctx *ctx, int rounds)
{
    hold h = {.ctx = ctx};
    rtb_thread th;
    if (rtb_sem_create(&h.go, 0) != RTB_OK) {
        rtb_emit_check_error(ctx, "lock_holds", "could not create the semaphore");
        return false;
    }
    rtb_thread_self_set(rtb_attr(ctx, NULL, 0).priority, ctx->opt->cpu);
    rtb_thread_attr a = rtb_attr(ctx, "lock-waiter", 1);
    if (rtb_thread_create(&th, &a, waiter, &h) != RTB_OK) {
        rtb_emit_check_error(ctx, "lock_holds", "could not create the waiter");
        rtb_sem_delete(&h.go);
        return false;
    }
    int early = 0, late = 0;
    for (int i = 0; i < rounds; i++) {
        rtb_sleep_until(rtb_clock_now() + 1000000); /* the waiter blocks again */
        int before = atomic_load(&h.woke);
        rtb_sched_lock();
        rtb_sem_give(&h.go);
        for (volatile int spin = 0; spin < 10000; spin++)
            ;
        early += atomic_load(&h.woke) != before;
        rtb_sched_unlock();
        late += atomic_load(&h.woke) == before; /* it preempts at the unlock */
    }
    atomic_store(&h.quit, true);
    rtb_sem_give(&h.go);
    rtb_join_all(ctx, &th, 1);
    rtb_sem_delete(&h.go);
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    bool ok = early == 0 && late == 0;
    rtb_emit_check(ctx, "lock_holds", ok,
                   "a higher-priority waiter given its semaphore inside the lock ran before the "
                   "unlock in %d of %d rounds, and not at the unlock in %d",
                   early, rounds, late);
    return ok;
}

static rtb_result run(rtb_ctx *ctx)
{
    size_t count = (size_t)rtb_param(ctx, "count");
    size_t cap = count < ctx->opt->max_samples ? count : ctx->opt->max_samples;
    rtb_series lock, unlock;
    if (rtb_series_init_streamed(&lock, ctx, "lock", cap) != RTB_OK ||
        rtb_series_init_streamed(&unlock, ctx, "unlock", cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples", (unsigned long long)cap);
        return RTB_ERROR;
    }
    rtb_result r = RTB_PASSED;
    int rc = RTB_OK;
    for (size_t i = 0; i < count && rc == RTB_OK; i++) {
        rtb_stamp t0 = rtb_stamp_now();
        rc = rtb_sched_lock();
        rtb_stamp t1 = rtb_stamp_now();
        if (rc == RTB_OK)
            rc = rtb_sched_unlock();
        rtb_stamp t2 = rtb_stamp_now();
        rtb_series_push(&lock, rtb_stamp_ns(t1 - t0));
        rtb_series_push(&unlock, rtb_stamp_ns(t2 - t1));
        rtb_series_drain(&lock); /* between windows: a full buffer goes out */
        rtb_series_drain(&unlock);
    }
    if (rc != RTB_OK) {
        rtb_emit_check_error(ctx, "lock", "the port's scheduler lock failed (error %d)", rc);
        r = RTB_ERROR;
    } else if (!check_holds(ctx, (int)rtb_param(ctx, "rounds"))) {
        r = RTB_FAILED;
    }
    rtb_emit_series(ctx, &lock);
    rtb_emit_series(ctx, &unlock);
    rtb_series_free(&unlock);
    rtb_series_free(&lock);
    return r;
}

static const char *unsupported_here(const rtb_port_info *port)
{
    return port->sched_lock ? NULL : port->sched_lock_detail;
}

const rtb_case rtb_case_thr_lock = {
    .id = "THR-LOCK",
    .title = "Scheduler lock / unlock",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .unsupported_here = unsupported_here,
};
