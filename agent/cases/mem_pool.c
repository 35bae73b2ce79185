/* SPDX-License-Identifier: Apache-2.0 */
/* MEM-POOL: take and give back a block of a fixed-block pool (rtb/alloc.h:
 * uC/OS memory partitions, Zephyr's k_mem_slab). `iterations` rounds of
 * one timed get and one timed put (series `get`, `put`), then every block
 * taken: the next get must say the pool is empty (check `exhausted`), and
 * each block given back must be usable again (check `reuse`). The pool's
 * storage comes from the case's memory. The series stream out between
 * rounds (after the put's stamp, before the next get's): a board's RAM
 * holds a buffer of samples, not the run's. */
#include "../core/rtb.h"
#include "rtb/alloc.h"

static const rtb_param_def params[] = {
    {.name = "block", .help = "block size in bytes", .def = {64}, .ndef = 1, .min = 4,
     .max = 65536},
    {.name = "blocks", .help = "blocks in the pool", .def = {32}, .ndef = 1, .min = 1,
     .max = 4096},
    {.name = "iterations", .help = "get/put rounds", .def = {1000}, .ndef = 1, .min = 1,
     .max = 10000000},
};

/* Takes every block; true when the pool then says empty, never a crash. */
static bool drain(rtb_pool *pool, void **held, int64_t blocks, int64_t *got)
{
    *got = 0;
    while (*got < blocks && rtb_pool_get(pool, &held[*got]) == RTB_OK)
        (*got)++;
    void *extra = NULL;
    int rc = rtb_pool_get(pool, &extra);
    if (rc == RTB_OK)
        rtb_pool_put(pool, extra);
    return rc == RTB_EAGAIN && *got == blocks;
}

static rtb_result run(rtb_ctx *ctx)
{
    if (rtb_pool_why())
        return rtb_unsupported(ctx, "%s", rtb_pool_why());
    int64_t block = rtb_param(ctx, "block"), blocks = rtb_param(ctx, "blocks");
    int64_t n = rtb_param(ctx, "iterations");
    size_t cap = (size_t)n < ctx->opt->max_samples ? (size_t)n : ctx->opt->max_samples;
    void *storage = rtb_mem_alloc((size_t)(block * blocks));
    void **held = rtb_mem_calloc((size_t)blocks, sizeof *held);
    rtb_pool pool;
    rtb_series g = {0}, p = {0};
    rtb_result r = RTB_PASSED;
    bool made = false;
    if (!storage || !held || rtb_series_init_streamed(&g, ctx, "get", cap) != RTB_OK ||
        rtb_series_init_streamed(&p, ctx, "put", cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for the pool or %llu samples",
                             (unsigned long long)cap);
        r = RTB_ERROR;
        goto out;
    }
    made = rtb_pool_create(&pool, storage, (size_t)block, (unsigned)blocks) == RTB_OK;
    if (!made) {
        rtb_emit_check_error(ctx, "pool", "the OS refused a pool of %lld blocks of %lld bytes",
                             (long long)blocks, (long long)block);
        r = RTB_ERROR;
        goto out;
    }
    rtb_thread_self_set(rtb_attr(ctx, "mem-pool", 0).priority, ctx->opt->cpu);
    int64_t failed = 0;
    for (int64_t i = 0; i < n && !atomic_load_explicit(&ctx->stop, memory_order_relaxed); i++) {
        void *b = NULL;
        rtb_stamp t0 = rtb_stamp_now();
        int rc = rtb_pool_get(&pool, &b);
        rtb_stamp t1 = rtb_stamp_now();
        if (rc != RTB_OK) {
            failed++;
            continue;
        }
        *(volatile char *)b = 1;
        rtb_stamp t2 = rtb_stamp_now();
        rtb_pool_put(&pool, b);
        rtb_stamp t3 = rtb_stamp_now();
        rtb_series_push(&g, rtb_stamp_ns(t1 - t0));
        rtb_series_push(&p, rtb_stamp_ns(t3 - t2));
        rtb_series_drain(&g); /* between rounds: nothing is measured */
        rtb_series_drain(&p);
    }
    if (failed) {
        rtb_emit_check_error(ctx, "get", "%lld of %lld gets from a pool with free blocks failed",
                             (long long)failed, (long long)n);
        r = RTB_ERROR;
    }
    int64_t got;
    bool empty = drain(&pool, held, blocks, &got);
    rtb_emit_check(ctx, "exhausted", empty, "%lld of %lld blocks taken, then the pool %s",
                   (long long)got, (long long)blocks, empty ? "said it was empty"
                                                            : "did not say it was empty");
    int64_t back = 0;
    for (int64_t i = 0; i < got; i++)
        back += rtb_pool_put(&pool, held[i]) == RTB_OK;
    bool reuse = drain(&pool, held, blocks, &got) && back == got;
    for (int64_t i = 0; i < got; i++)
        rtb_pool_put(&pool, held[i]);
    rtb_emit_check(ctx, "reuse", reuse, "%lld blocks given back, %lld taken again", (long long)back,
                   (long long)got);
    if (r == RTB_PASSED && !(empty && reuse))
        r = RTB_FAILED;
    rtb_emit_series(ctx, &g);
    rtb_emit_series(ctx, &p);
out:
    if (made)
        rtb_pool_delete(&pool);
    rtb_series_free(&p);
    rtb_series_free(&g);
    rtb_mem_free(held);
    rtb_mem_free(storage);
    return r;
}

const rtb_case rtb_case_mem_pool = {
    .id = "MEM-POOL",
    .title = "Fixed-block pool get and put, and an exhausted pool",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
