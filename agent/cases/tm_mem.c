/* SPDX-License-Identifier: Apache-2.0 */
/* TM-MEM: memory allocation (Thread-Metric). One worker allocates 128
 * bytes from the OS's heap (rtb/alloc.h) and frees them; the score is
 * pairs a second. Unsupported where the port has no heap. */
#include "rtb/alloc.h"
#include "tm.h"

static const rtb_param_def params[] = {TM_PARAMS};

static void worker(void *arg)
{
    tm_worker *w = arg;
    while (tm_running(w->t)) {
        void *p;
        if (rtb_heap_alloc(128, &p) != RTB_OK)
            break;
        rtb_heap_free(p);
        tm_count(w);
    }
}

static rtb_result run(rtb_ctx *ctx)
{
    if (rtb_heap_why())
        return rtb_unsupported(ctx, "%s", rtb_heap_why());
    tm *t = rtb_mem_calloc(1, sizeof *t);
    if (!t) {
        rtb_emit_check_error(ctx, "buffer", "no memory");
        return RTB_ERROR;
    }
    t->ctx = ctx;
    rtb_thread_attr a = rtb_attr(ctx, "tm-mem", 0);
    rtb_result r = tm_run(ctx, t, &a, worker, 1);
    rtb_mem_free(t);
    return r;
}

const rtb_case rtb_case_tm_mem = {
    .id = "TM-MEM",
    .title = "Throughput: memory allocation (heap, 128 bytes)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
