/* SPDX-License-Identifier: Apache-2.0 */
/* MQ-LAT: message latency by ping-pong. A (p) stamps, writes the stamp into
 * a message and sends it to B (p+1); B stamps on receipt (one way = B's
 * stamp - the stamp in the message) and echoes the message back; A stamps
 * on receipt (round trip). Both directions carry the full message size, a
 * sweep. Same CPU by default, so a send switches straight to B.
 * The stamps are kept a block of rounds at a time (rtb_stamp_block: all of
 * them on POSIX, 128 on a board): A turns a block into samples at the top
 * of its next round, before its stamp, when B has echoed the block's last
 * message and waits for the next one, as at the start. */
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "round trips timed per size", .def = {1000}, .ndef = 1,
     .min = 1, .max = 10000000},
    {.name = "size", .help = "message size in bytes (a sweep; above 8192 needs privilege)",
     .def = {16, 1024}, .ndef = 2, .min = 16, .max = 1 << 20, .list = true},
    {.name = "cross_cpu", .help = "1: B on another CPU than A (0: both on the measurement CPU)",
     .def = {0}, .ndef = 1, .min = 0, .max = 1},
};

#define WARMUP 10
#define STOP UINT64_MAX

typedef struct lat {
    rtb_ctx *ctx;
    rtb_queue ab, ba;
    size_t size, n; /* n includes the warm-up rounds */
    size_t blk, done, taken; /* rounds in a block of stamps, completed, turned into samples */
    char *a_out, *a_in, *b_buf; /* size bytes each: mq_receive needs mq_msgsize */
    rtb_stamp *one, *round; /* in ticks, converted between blocks; round i at i % blk */
    rtb_series *s_one, *s_rt;
} lat;

/* Rounds taken..done into samples (the warm-up's are none), between rounds. */
static void take_block(lat *x)
{
    for (size_t i = x->taken; i < x->done; i++) {
        if (i < WARMUP)
            continue;
        rtb_series_push(x->s_one, rtb_stamp_ns(x->one[i % x->blk]));
        rtb_series_push(x->s_rt, rtb_stamp_ns(x->round[i % x->blk]));
        rtb_series_drain(x->s_one); /* between rounds: nothing is measured */
        rtb_series_drain(x->s_rt);
    }
    x->taken = x->done;
}

static void pinger(void *arg)
{
    lat *x = arg;
    for (uint64_t i = 0; i < x->n && !atomic_load(&x->ctx->stop); i++) {
        if (i % x->blk == 0 && i > 0) /* B echoed the block's last round and waits */
            take_block(x);
        rtb_stamp t0 = rtb_stamp_now();
        memcpy(x->a_out, &i, sizeof i);
        memcpy(x->a_out + 8, &t0, sizeof t0);
        if (rtb_queue_send(&x->ab, x->a_out, x->size, x->ctx->deadline) != RTB_OK)
            break;
        int len = rtb_queue_receive(&x->ba, x->a_in, x->size, x->ctx->deadline);
        rtb_stamp t2 = rtb_stamp_now();
        if (len != (int)x->size)
            break;
        x->round[i % x->blk] = t2 - t0;
        x->done = i + 1;
    }
    uint64_t stop = STOP;
    memcpy(x->a_out, &stop, sizeof stop);
    rtb_queue_send(&x->ab, x->a_out, x->size, x->ctx->deadline);
}

static void echo(void *arg)
{
    lat *x = arg;
    for (;;) {
        int len = rtb_queue_receive(&x->ab, x->b_buf, x->size, x->ctx->deadline);
        rtb_stamp t1 = rtb_stamp_now();
        uint64_t i = STOP;
        rtb_stamp t0;
        if (len == (int)x->size)
            memcpy(&i, x->b_buf, sizeof i);
        if (i >= x->n)
            break;
        memcpy(&t0, x->b_buf + 8, sizeof t0);
        x->one[i % x->blk] = t1 - t0;
        if (rtb_queue_send(&x->ba, x->b_buf, x->size, x->ctx->deadline) != RTB_OK)
            break;
    }
}

static rtb_result point(rtb_ctx *ctx, size_t size, size_t n, rtb_series *one, rtb_series *rt)
{
    lat x = {.ctx = ctx, .size = size, .n = n + WARMUP, .s_one = one, .s_rt = rt};
    x.blk = rtb_stamp_block(x.n);
    x.a_out = rtb_mem_calloc(1, size);
    x.a_in = rtb_mem_calloc(1, size);
    x.b_buf = rtb_mem_calloc(1, size);
    x.one = rtb_mem_calloc(x.blk, sizeof *x.one);
    x.round = rtb_mem_calloc(x.blk, sizeof *x.round);
    rtb_result r = RTB_ERROR;
    int qa = RTB_ENOMEM, qb = RTB_ENOMEM;
    if (!x.a_out || !x.a_in || !x.b_buf || !x.one || !x.round) {
        rtb_emit_check_error(ctx, "buffer", "no memory for size %llu", (unsigned long long)size);
        goto out;
    }
    /* Fault them in now: the echo's store of one[i] lies inside a round trip. */
    memset(x.one, 0, x.blk * sizeof *x.one);
    memset(x.round, 0, x.blk * sizeof *x.round);
    qa = rtb_queue_create(&x.ab, size, 1);
    qb = rtb_queue_create(&x.ba, size, 1);
    if (qa != RTB_OK || qb != RTB_OK) {
        rtb_emit_check_error(ctx, "queue", "cannot create queues of %llu-byte messages (%d, %d)",
                             (unsigned long long)size, qa, qb);
        goto out;
    }
    rtb_thread th[2];
    rtb_thread_attr ab = rtb_attr(ctx, "mq-echo", 1), aa = rtb_attr(ctx, "mq-ping", 0);
    if (rtb_param(ctx, "cross_cpu"))
        ab.cpu = rtb_cpu_other(ctx->port, ctx->opt->cpu);
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    int nt = 0;
    if (rtb_thread_create(&th[nt], &ab, echo, &x) == RTB_OK)
        nt++;
    if (nt == 1 && rtb_thread_create(&th[nt], &aa, pinger, &x) == RTB_OK)
        nt++;
    if (nt == 1) { /* no pinger: end the echo thread */
        uint64_t stop = STOP;
        memcpy(x.a_out, &stop, sizeof stop);
        rtb_queue_send(&x.ab, x.a_out, size, ctx->deadline);
    }
    int rc = rtb_join_all(ctx, th, nt);
    take_block(&x); /* the last one, after the exchange */
    if (nt < 2 || rc != RTB_OK || x.done < x.n)
        rtb_emit_check_error(ctx, "exchange", "size %llu: %llu of %llu round trips completed",
                             (unsigned long long)size, (unsigned long long)x.done,
                             (unsigned long long)x.n);
    else
        r = RTB_PASSED;
out:
    if (qa == RTB_OK)
        rtb_queue_delete(&x.ab);
    if (qb == RTB_OK)
        rtb_queue_delete(&x.ba);
    rtb_mem_free(x.a_out);
    rtb_mem_free(x.a_in);
    rtb_mem_free(x.b_buf);
    rtb_mem_free(x.one);
    rtb_mem_free(x.round);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    size_t n = (size_t)rtb_param(ctx, "iterations");
    if (rtb_param(ctx, "cross_cpu") && !rtb_need_cpus(ctx, "cross_cpu", 2))
        return RTB_SKIPPED;
    const int64_t *sizes;
    int points = rtb_param_list(ctx, "size", &sizes);
    size_t cap = n < ctx->opt->max_samples ? n : ctx->opt->max_samples;
    rtb_result worst = RTB_PASSED;
    for (int p = 0; p < points; p++) {
        rtb_series one, rt;
        if (rtb_series_init_streamed(&one, ctx, "one_way", cap) != RTB_OK ||
            rtb_series_init_streamed(&rt, ctx, "round_trip", cap) != RTB_OK) {
            rtb_series_free(&one);
            rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples",
                                 (unsigned long long)cap);
            return RTB_ERROR;
        }
        rtb_series_set_point(&one, "size", sizes[p]);
        rtb_series_set_point(&rt, "size", sizes[p]);
        if (point(ctx, (size_t)sizes[p], n, &one, &rt) != RTB_PASSED)
            worst = RTB_ERROR;
        rtb_emit_series(ctx, &one);
        rtb_emit_series(ctx, &rt);
        rtb_series_free(&one);
        rtb_series_free(&rt);
    }
    return worst;
}

const rtb_case rtb_case_mq_lat = {
    .id = "MQ-LAT",
    .title = "Message latency: ping-pong, one way and round trip",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
