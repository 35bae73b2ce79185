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
    return tm_one(ctx, &(tm_spec){.fn = worker, .n = 1, .name = "tm-mem"});
}

const rtb_case rtb_case_tm_mem = {
    .id = "TM-MEM",
    .title = "Throughput: memory allocation (heap, 128 bytes)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
