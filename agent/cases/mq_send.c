/* SPDX-License-Identifier: Apache-2.0 */
/* MQ-SEND: message-queue send variants, 16-byte messages. (1) No receiver
 * waiting: the call alone. (2) A higher-priority receiver pends on the
 * queue: from the send until the receiver runs with the message (the
 * switch included). (3) The queue is full and the deadline is 0: the error
 * path, which must say RTB_EAGAIN.
 * (2) keeps its stamps a block of sends at a time (rtb_stamp_block: all of
 * them on POSIX, 128 on a board): the sender turns a block into samples
 * before its next stamp, when the receiver has taken the block's last
 * message and pends again, as at the start. */
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "sends timed per variant", .def = {1000}, .ndef = 1,
     .min = 1, .max = 10000000},
};

#define MSG 16
#define DEPTH 10 /* Linux's default msg_max: no privilege needed */
#define STOP UINT64_MAX

static void drain(rtb_queue *q)
{
    char buf[MSG];
    while (rtb_queue_receive(q, buf, sizeof buf, 0) >= 0)
        ;
}

/* Timed in batches of DEPTH, draining between them (not timed). */
static int no_pend(rtb_ctx *ctx, rtb_queue *q, size_t n, rtb_series *s)
{
    char msg[MSG] = {0};
    int bad = 0;
    for (size_t i = 0; i < n && !atomic_load(&ctx->stop);) {
        for (int k = 0; k < DEPTH && i < n; k++, i++) {
            rtb_stamp t0 = rtb_stamp_now();
            int rc = rtb_queue_send(q, msg, sizeof msg, 0);
            rtb_stamp t1 = rtb_stamp_now();
            rtb_series_push(s, rtb_stamp_ns(t1 - t0));
            bad += rc != RTB_OK;
            rtb_series_drain(s); /* between windows: a full buffer goes out */
        }
        drain(q);
    }
    return bad;
}

typedef struct pend {
    rtb_ctx *ctx;
    rtb_queue *q;
    size_t n, sent;
    size_t blk, taken;       /* sends in a block of stamps, turned into samples */
    size_t late;             /* the receiver was not pending (or ran late) */
    bool last_pending;       /* a done block's last send awaits the next one's first stamp */
    bool last_late;
    rtb_stamp last_recv;
    rtb_series *out;
    rtb_stamp *t_send, *t_recv; /* send i at i % blk */
} pend;

/* Sends taken..sent into samples, between sends. The receiver pends before
 * each send only if it ran before the sender's next stamp: the last send
 * of a block that is not the last one waits for the next block's first. */
static void take_block(pend *x, bool final)
{
    if (x->last_pending)
        x->late += x->last_late || (x->sent > x->taken && x->last_recv > x->t_send[0]);
    x->last_pending = false;
    for (size_t i = x->taken; i < x->sent; i++) {
        size_t k = i % x->blk;
        rtb_series_push(x->out, rtb_stamp_ns(x->t_recv[k] - x->t_send[k]));
        rtb_series_drain(x->out); /* between sends: nothing is measured */
        bool early = x->t_recv[k] < x->t_send[k];
        if (!final && i + 1 == x->sent) {
            x->last_pending = true;
            x->last_late = early;
            x->last_recv = x->t_recv[k];
        } else {
            x->late += early || (i + 1 < x->sent && x->t_recv[k] > x->t_send[k + 1]);
        }
    }
    x->taken = x->sent;
}

static void receiver(void *arg)
{
    pend *x = arg;
    char buf[MSG];
    for (;;) {
        int len = rtb_queue_receive(x->q, buf, sizeof buf, x->ctx->deadline);
        rtb_stamp t = rtb_stamp_now();
        uint64_t i = STOP;
        if (len == MSG)
            memcpy(&i, buf, sizeof i);
        if (i >= x->n)
            break;
        x->t_recv[i % x->blk] = t;
    }
}

static void sender(void *arg)
{
    pend *x = arg;
    char msg[MSG] = {0};
    for (uint64_t i = 0; i < x->n && !atomic_load(&x->ctx->stop); i++) {
        if (i % x->blk == 0 && i > 0) /* the receiver has the block's last and pends */
            take_block(x, false);
        memcpy(msg, &i, sizeof i);
        x->t_send[i % x->blk] = rtb_stamp_now();
        if (rtb_queue_send(x->q, msg, sizeof msg, x->ctx->deadline) != RTB_OK)
            break;
        x->sent = i + 1;
    }
    uint64_t stop = STOP;
    memcpy(msg, &stop, sizeof stop);
    rtb_queue_send(x->q, msg, sizeof msg, x->ctx->deadline);
}

static int pending(rtb_ctx *ctx, rtb_queue *q, size_t n, rtb_series *s)
{
    pend x = {.ctx = ctx, .q = q, .n = n, .out = s};
    x.blk = rtb_stamp_block(n);
    x.t_send = rtb_mem_calloc(x.blk, sizeof *x.t_send);
    x.t_recv = rtb_mem_calloc(x.blk, sizeof *x.t_recv);
    int rc = RTB_ENOMEM;
    if (x.t_send && x.t_recv) {
        /* Fault them in now: the sender stores its stamp inside the sample. */
        memset(x.t_send, 0, x.blk * sizeof *x.t_send);
        memset(x.t_recv, 0, x.blk * sizeof *x.t_recv);
        rtb_thread th[2];
        rtb_thread_attr ar = rtb_attr(ctx, "mq-recv", 1), as = rtb_attr(ctx, "mq-send", 0);
        rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
        int nt = 0;
        if (rtb_thread_create(&th[nt], &ar, receiver, &x) == RTB_OK)
            nt++;
        if (nt == 1 && rtb_thread_create(&th[nt], &as, sender, &x) == RTB_OK)
            nt++;
        if (nt == 1) { /* no sender: end the receiver */
            char stop[MSG];
            uint64_t v = STOP;
            memcpy(stop, &v, sizeof v);
            rtb_queue_send(q, stop, sizeof stop, ctx->deadline);
        }
        rc = rtb_join_all(ctx, th, nt);
        if (nt < 2)
            rc = RTB_EFAIL;
        /* Without real-time priority the receiver may not pend. */
        take_block(&x, true); /* the last one, after the exchange */
        size_t late = x.late;
        if (late)
            rtb_warn(ctx, "not_pending",
                     "in %llu of %llu sends the receiver was not waiting (or ran late)",
                     (unsigned long long)late, (unsigned long long)x.sent);
        if (rc == RTB_OK && x.sent < n)
            rc = RTB_EFAIL;
    }
    rtb_mem_free(x.t_send);
    rtb_mem_free(x.t_recv);
    drain(q);
    return rc;
}

static rtb_result full(rtb_ctx *ctx, rtb_queue *q, size_t n, rtb_series *s)
{
    char msg[MSG] = {0};
    int filled = 0;
    while (filled <= DEPTH && rtb_queue_send(q, msg, sizeof msg, 0) == RTB_OK)
        filled++;
    if (filled != DEPTH) {
        drain(q);
        rtb_emit_check_error(ctx, "full", "the queue of depth %d took %d messages", DEPTH,
                             filled);
        return RTB_ERROR;
    }
    size_t eagain = 0, other = 0;
    int other_rc = 0;
    for (size_t i = 0; i < n && !atomic_load(&ctx->stop); i++) {
        rtb_stamp t0 = rtb_stamp_now();
        int rc = rtb_queue_send(q, msg, sizeof msg, 0);
        rtb_stamp t1 = rtb_stamp_now();
        rtb_series_push(s, rtb_stamp_ns(t1 - t0));
        rtb_series_drain(s); /* between windows: a full buffer goes out */
        if (rc == RTB_EAGAIN) {
            eagain++;
        } else {
            other++;
            other_rc = rc;
        }
    }
    drain(q);
    bool ok = other == 0 && eagain > 0;
    if (other)
        rtb_emit_check(ctx, "full", false,
                       "%llu sends to the full queue returned RTB_EAGAIN, %llu something else "
                       "(last: %d)",
                       (unsigned long long)eagain, (unsigned long long)other, other_rc);
    else
        rtb_emit_check(ctx, "full", ok, "%llu of %llu sends to the full queue returned RTB_EAGAIN",
                       (unsigned long long)eagain, (unsigned long long)eagain);
    return ok ? RTB_PASSED : RTB_FAILED;
}

static rtb_result run(rtb_ctx *ctx)
{
    size_t n = (size_t)rtb_param(ctx, "iterations");
    size_t cap = n < ctx->opt->max_samples ? n : ctx->opt->max_samples;
    static const char *const names[] = {"no_pend", "pend", "full"};
    rtb_series s[3];
    int ok = 0;
    for (int i = 0; i < 3; i++)
        ok += rtb_series_init_streamed(&s[i], ctx, names[i], cap) == RTB_OK;
    rtb_queue q;
    int rc = ok == 3 ? rtb_queue_create(&q, MSG, DEPTH) : RTB_ENOMEM;
    rtb_result r = RTB_PASSED;
    if (rc != RTB_OK) {
        rtb_emit_check_error(ctx, "queue", "cannot create a queue of %d x %d bytes (%d)", DEPTH,
                             MSG, rc);
        r = RTB_ERROR;
    } else {
        rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
        int bad = no_pend(ctx, &q, n, &s[0]);
        if (bad) {
            rtb_emit_check_error(ctx, "queue", "%d sends to a queue with room failed", bad);
            r = RTB_ERROR;
        }
        if (pending(ctx, &q, n, &s[1]) != RTB_OK) {
            rtb_emit_check_error(ctx, "queue", "the pending-receiver exchange did not complete");
            r = RTB_ERROR;
        }
        rtb_result f = full(ctx, &q, n, &s[2]);
        if (r == RTB_PASSED)
            r = f;
        rtb_queue_delete(&q);
        for (int i = 0; i < 3; i++)
            rtb_emit_series(ctx, &s[i]);
    }
    for (int i = 0; i < 3; i++)
        rtb_series_free(&s[i]);
    return r;
}

const rtb_case rtb_case_mq_send = {
    .id = "MQ-SEND",
    .title = "Message queue send: no receiver, pending receiver, full queue",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
