/* SPDX-License-Identifier: Apache-2.0 */
/* TM-BASIC: basic processing (Thread-Metric). One worker runs a fixed
 * piece of arithmetic and memory work with no OS call: the CPU's (or the
 * emulator's) own speed, the score the others are read against. */
#include "tm.h"

static const rtb_param_def params[] = {TM_PARAMS};

#define WORK 256

static void worker(void *arg)
{
    tm_worker *w = arg;
    volatile uint32_t buf[WORK];
    uint32_t x = 1;
    while (tm_running(w->t)) {
        for (int i = 0; i < WORK; i++) {
            x = x * 1103515245u + 12345u;
            buf[i] = x ^ (uint32_t)i;
        }
        for (int i = 0; i < WORK; i++)
            x += buf[i];
        tm_count(w);
    }
}

static rtb_result run(rtb_ctx *ctx)
{
    return tm_one(ctx, &(tm_spec){.fn = worker, .n = 1, .name = "tm-basic"});
}

const rtb_case rtb_case_tm_basic = {
    .id = "TM-BASIC",
    .title = "Throughput: basic processing (no OS call)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
