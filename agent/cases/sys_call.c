/* SPDX-License-Identifier: Apache-2.0 */
/* SYS-CALL: the system call latency table. Each common primitive call is
 * timed on its own, `iterations` times, by one thread alone on the
 * measurement CPU: one series (a row of the table) per call. Nothing
 * contends and nothing blocks, so each row is the call's own cost (plus one
 * timestamp read, which the clock_read row shows).
 *
 * A board's RAM (issue 22): its series are streamed (RTB_SERIES_BUFFER) and
 * still each keeps a 2.1 KiB histogram, 50 KiB for 16 rows. There the rows
 * are recorded GROUP at a time: every pass still makes every call in table
 * order (each call is timed in the same surroundings as ever), and only
 * the group's rows are kept, `iterations` passes a group after its own
 * warm-up; a group's series go out before the next group's begin. A
 * buffer drains after a pass, outside the timed calls. Where series are
 * held (POSIX) all rows are one group: the same passes as ever. */
#include <stdlib.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "calls timed per row", .def = {1000}, .ndef = 1, .min = 1,
     .max = 10000000},
};

#define WARMUP 10
/* Rows recorded at once: 4 x (2.1 KiB histogram + 1 KiB buffer) on a
 * board, all of them where series are held. */
#define GROUP (RTB_SERIES_BUFFER ? 4 : ROWS)
#define FAR_AHEAD 3600000000000LL /* a timer armed an hour ahead never fires */

enum {
    THREAD_CREATE, THREAD_DELETE, PRIO_SET, PRIO_GET, YIELD_NOSWITCH, SEM_CREATE, SEM_DELETE,
    SEM_GIVE, SEM_TAKE, MUTEX_LOCK, MUTEX_UNLOCK, QUEUE_SEND, QUEUE_RECEIVE, TIMER_ARM,
    TIMER_CANCEL, CLOCK_READ, ROWS
};

static const char *const row_names[ROWS] = {
    "thread_create", "thread_delete", "prio_set", "prio_get", "yield_noswitch", "sem_create",
    "sem_delete", "sem_give", "sem_take", "mutex_lock", "mutex_unlock", "queue_send",
    "queue_receive", "timer_arm", "timer_cancel", "clock_read",
};

typedef struct sys {
    rtb_ctx *ctx;
    rtb_series *s; /* rows lo..hi-1 (GROUP of them) */
    int lo, hi;    /* the rows recorded now */
    bool record;   /* false during the warm-up */
    int failures;
    rtb_thread_attr child;
    rtb_sem sem;
    rtb_mutex mutex;
    rtb_queue queue;
    rtb_event event;
    int prio;
} sys;

/* A thread created below its creator on the same CPU: deleted before it
 * ever runs, as an RTOS task created and deleted at once. */
static void child_fn(void *arg) { (void)arg; }

static void on_event(void *arg) { (void)arg; }

#define TIMED(x, row, call)                                   \
    do {                                                      \
        rtb_stamp t0_ = rtb_stamp_now();                         \
        int rc_ = (call);                                     \
        rtb_stamp t1_ = rtb_stamp_now();                         \
        if ((x)->record && (row) >= (x)->lo && (row) < (x)->hi)   \
            rtb_series_push(&(x)->s[(row) - (x)->lo], rtb_stamp_ns(t1_ - t0_));\
        (x)->failures += rc_ < 0;                             \
    } while (0)

static int yield_call(void)
{
    rtb_thread_yield();
    return RTB_OK;
}

static int clock_call(void)
{
    return rtb_clock_now() > 0 ? RTB_OK : RTB_EFAIL;
}

/* One call of every row, in table order. */
static void one_pass(sys *x)
{
    rtb_thread th;
    rtb_sem sem;
    char msg[16] = {0}, buf[16];
    TIMED(x, THREAD_CREATE, rtb_thread_create(&th, &x->child, child_fn, NULL));
    TIMED(x, THREAD_DELETE, rtb_thread_delete(&th));
    /* A real change each time, between the top case priority and one below. */
    x->prio = x->prio == RTB_PRIO_MAX - 1 ? RTB_PRIO_MAX - 2 : RTB_PRIO_MAX - 1;
    TIMED(x, PRIO_SET, rtb_thread_self_set(x->prio, -1));
    TIMED(x, PRIO_GET, rtb_thread_self_priority());
    TIMED(x, YIELD_NOSWITCH, yield_call());
    TIMED(x, SEM_CREATE, rtb_sem_create(&sem, 0));
    TIMED(x, SEM_DELETE, rtb_sem_delete(&sem));
    TIMED(x, SEM_GIVE, rtb_sem_give(&x->sem));
    TIMED(x, SEM_TAKE, rtb_sem_take(&x->sem, x->ctx->deadline));
    TIMED(x, MUTEX_LOCK, rtb_mutex_lock(&x->mutex));
    TIMED(x, MUTEX_UNLOCK, rtb_mutex_unlock(&x->mutex));
    TIMED(x, QUEUE_SEND, rtb_queue_send(&x->queue, msg, sizeof msg, 0));
    TIMED(x, QUEUE_RECEIVE, rtb_queue_receive(&x->queue, buf, sizeof buf, 0));
    rtb_time when = rtb_clock_now() + FAR_AHEAD;
    TIMED(x, TIMER_ARM, rtb_event_arm(&x->event, when, 0));
    TIMED(x, TIMER_CANCEL, rtb_event_arm(&x->event, 0, 0));
    TIMED(x, CLOCK_READ, clock_call());
}

/* Rows lo..hi-1: their series, a warm-up and n passes, the series out. */
static rtb_result group(rtb_ctx *ctx, sys *x, size_t n, size_t cap)
{
    int ready = 0;
    while (x->lo + ready < x->hi &&
           rtb_series_init_streamed(&x->s[ready], ctx, row_names[x->lo + ready], cap) == RTB_OK)
        ready++;
    rtb_result r = RTB_PASSED;
    if (x->lo + ready < x->hi) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %d x %llu samples", ROWS,
                             (unsigned long long)cap);
        r = RTB_ERROR;
    } else {
        /* The first timer arm creates the timer, the first thread create
         * allocates a stack (and a group's series went out before it):
         * warm up so that rows show the steady state. */
        x->record = false;
        for (int i = 0; i < WARMUP; i++)
            one_pass(x);
        x->record = true;
        for (size_t i = 0; i < n && !atomic_load(&ctx->stop); i++) {
            one_pass(x);
            for (int k = 0; k < ready; k++)
                rtb_series_drain(&x->s[k]); /* after the pass: nothing is timed */
        }
        if (x->hi == ROWS && x->failures) {
            rtb_emit_check_error(ctx, "calls", "%d primitive calls failed", x->failures);
            r = RTB_ERROR;
        }
        for (int k = 0; k < ready; k++)
            rtb_emit_series(ctx, &x->s[k]);
    }
    while (ready-- > 0) /* in reverse: an arena takes back its top */
        rtb_series_free(&x->s[ready]);
    return r;
}

static rtb_result measure(rtb_ctx *ctx, sys *x, size_t n, size_t cap)
{
    if (rtb_sem_create(&x->sem, 0) != RTB_OK)
        goto no_sem;
    if (rtb_mutex_create(&x->mutex, 0) != RTB_OK)
        goto no_mutex;
    if (rtb_queue_create(&x->queue, 16, 1) != RTB_OK)
        goto no_queue;
    if (rtb_event_create(&x->event, on_event, NULL, NULL) != RTB_OK)
        goto no_event;
    x->prio = RTB_PRIO_MAX - 1;
    rtb_thread_self_set(x->prio, ctx->opt->cpu);
    x->child = rtb_attr(ctx, "sys-call", 0);
    rtb_result r = RTB_PASSED;
    for (x->lo = 0; r == RTB_PASSED && x->lo < ROWS && !atomic_load(&ctx->stop);
         x->lo = x->hi) {
        x->hi = x->lo + GROUP < ROWS ? x->lo + GROUP : ROWS;
        r = group(ctx, x, n, cap);
    }
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_event_delete(&x->event);
    rtb_queue_delete(&x->queue);
    rtb_mutex_delete(&x->mutex);
    rtb_sem_delete(&x->sem);
    return r;
no_event:
    rtb_queue_delete(&x->queue);
no_queue:
    rtb_mutex_delete(&x->mutex);
no_mutex:
    rtb_sem_delete(&x->sem);
no_sem:
    rtb_emit_check_error(ctx, "objects", "cannot create the semaphore, mutex, queue or timer");
    return RTB_ERROR;
}

static rtb_result run(rtb_ctx *ctx)
{
    size_t n = (size_t)rtb_param(ctx, "iterations");
    size_t cap = n < ctx->opt->max_samples ? n : ctx->opt->max_samples;
    sys x = {.ctx = ctx, .s = rtb_mem_calloc(GROUP, sizeof(rtb_series))};
    if (!x.s) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %d x %llu samples", ROWS,
                             (unsigned long long)cap);
        return RTB_ERROR;
    }
    rtb_result r = measure(ctx, &x, n, cap);
    rtb_mem_free(x.s);
    return r;
}

const rtb_case rtb_case_sys_call = {
    .id = "SYS-CALL",
    .title = "System call latency table (one row per primitive call)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
