/* SPDX-License-Identifier: Apache-2.0 */
/* MEM-HEAP: allocate and free from the OS's general heap (rtb/alloc.h;
 * Zephyr latency_measure's heap figures). For each block size, `iterations`
 * rounds of one timed allocation and one timed free: alone (series `alloc`,
 * `free`), then with `contenders` threads of the same priority on the other
 * CPUs allocating and freeing the same size all the while (`alloc_contended`,
 * `free_contended`); point `size`. An allocation the heap refuses is
 * counted and reported, never a sample. */
#include "../core/rtb.h"
#include "rtb/alloc.h"

static const rtb_param_def params[] = {
    {.name = "size", .help = "block sizes in bytes (a sweep)", .def = {16, 256, 4096}, .ndef = 3,
     .min = 1, .max = 1 << 24, .list = true},
    {.name = "iterations", .help = "alloc/free rounds per point", .def = {1000}, .ndef = 1,
     .min = 1, .max = 10000000},
    {.name = "contenders", .help = "threads allocating beside, for the contended series (0: "
     "none measured)", .def = {1}, .ndef = 1, .min = 0, .max = 8},
};

#define MAX_CONTENDERS 8

typedef struct heap_run {
    rtb_ctx *ctx;
    size_t size;
    atomic_bool quit;
    atomic_llong rounds; /* the contenders' alloc/free pairs */
} heap_run;

static void contend(void *arg)
{
    heap_run *h = arg;
    while (!atomic_load_explicit(&h->quit, memory_order_relaxed) &&
           !atomic_load_explicit(&h->ctx->stop, memory_order_relaxed)) {
        void *p;
        if (rtb_heap_alloc(h->size, &p) == RTB_OK) {
            *(volatile char *)p = 1;
            rtb_heap_free(p);
            atomic_fetch_add_explicit(&h->rounds, 1, memory_order_relaxed);
        }
    }
}

/* One point: `n` timed rounds into a and f; the refusals counted. */
static int64_t measure(heap_run *h, int64_t n, rtb_series *a, rtb_series *f)
{
    int64_t refused = 0;
    for (int64_t i = 0; i < n && !atomic_load_explicit(&h->ctx->stop, memory_order_relaxed);
         i++) {
        void *p;
        rtb_stamp t0 = rtb_stamp_now();
        int rc = rtb_heap_alloc(h->size, &p);
        rtb_stamp t1 = rtb_stamp_now();
        if (rc != RTB_OK) {
            refused++;
            continue;
        }
        *(volatile char *)p = 1; /* the block is usable: touch it, untimed */
        rtb_stamp t2 = rtb_stamp_now();
        rtb_heap_free(p);
        rtb_stamp t3 = rtb_stamp_now();
        rtb_series_push(a, rtb_stamp_ns(t1 - t0));
        rtb_series_push(f, rtb_stamp_ns(t3 - t2));
    }
    return refused;
}

static rtb_result point(rtb_ctx *ctx, size_t size, int contenders, int64_t n, size_t cap)
{
    heap_run *h = rtb_mem_calloc(1, sizeof *h);
    rtb_thread *th = rtb_mem_calloc(MAX_CONTENDERS, sizeof *th);
    rtb_series a = {0}, f = {0};
    rtb_result r = RTB_PASSED;
    if (!h || !th || rtb_series_init(&a, contenders ? "alloc_contended" : "alloc", cap) != RTB_OK ||
        rtb_series_init(&f, contenders ? "free_contended" : "free", cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples",
                             (unsigned long long)cap);
        r = RTB_ERROR;
        goto out;
    }
    h->ctx = ctx;
    h->size = size;
    rtb_series_set_point(&a, "size", (int64_t)size);
    rtb_series_set_point(&f, "size", (int64_t)size);
    int started = 0, cpus = rtb_cpus_allowed(ctx->port), next = ctx->opt->cpu;
    for (int i = 0; i < contenders; i++) {
        rtb_thread_attr at = rtb_attr(ctx, "mem-contender", 0);
        /* Beside the measured thread, never in front of it on its CPU: round
         * the other CPUs this process may run on. */
        if (cpus > 1) {
            next = rtb_cpu_other(ctx->port, next);
            if (next == ctx->opt->cpu)
                next = rtb_cpu_other(ctx->port, next);
        }
        at.cpu = cpus > 1 ? next : ctx->opt->cpu;
        if (cpus == 1)
            at.priority = at.priority > 1 ? at.priority - 1 : 1;
        if (rtb_thread_create(&th[started], &at, contend, h) == RTB_OK)
            started++;
    }
    int64_t refused = measure(h, n, &a, &f);
    atomic_store(&h->quit, true);
    if (rtb_join_all(ctx, th, started) != RTB_OK)
        r = RTB_ERROR;
    if (started < contenders)
        rtb_warn(ctx, "contenders", "size %llu: %d of %d contending threads started",
                 (unsigned long long)size, started, contenders);
    if (contenders && !atomic_load(&h->rounds))
        rtb_warn(ctx, "contenders_idle", "size %llu: the contending threads never allocated",
                 (unsigned long long)size);
    if (refused)
        rtb_warn(ctx, "refused", "size %llu, %d contenders: the heap refused %lld of %lld "
                 "allocations (not samples)", (unsigned long long)size, contenders,
                 (long long)refused, (long long)n);
    if (r == RTB_PASSED) {
        rtb_emit_series(ctx, &a);
        rtb_emit_series(ctx, &f);
    }
out:
    rtb_series_free(&f);
    rtb_series_free(&a);
    rtb_mem_free(th);
    rtb_mem_free(h);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    void *probe;
    int rc = rtb_heap_alloc(16, &probe);
    if (rc == RTB_ENOTSUP)
        return rtb_unsupported(ctx, "%s", rtb_heap_why());
    if (rc == RTB_OK)
        rtb_heap_free(probe);
    const int64_t *sizes;
    int ns = rtb_param_list(ctx, "size", &sizes);
    int contenders = (int)rtb_param(ctx, "contenders");
    int64_t n = rtb_param(ctx, "iterations");
    size_t cap = (size_t)n < ctx->opt->max_samples ? (size_t)n : ctx->opt->max_samples;
    rtb_thread_self_set(rtb_attr(ctx, "mem-heap", 0).priority, ctx->opt->cpu);
    rtb_result r = RTB_PASSED;
    for (int c = 0; c <= (contenders ? 1 : 0) && r == RTB_PASSED; c++)
        for (int s = 0; s < ns && r == RTB_PASSED; s++)
            r = point(ctx, (size_t)sizes[s], c ? contenders : 0, n, cap);
    return r;
}

const rtb_case rtb_case_mem_heap = {
    .id = "MEM-HEAP",
    .title = "Heap allocate and free, alone and contended",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
