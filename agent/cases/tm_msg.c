/* SPDX-License-Identifier: Apache-2.0 */
/* TM-MSG: message processing (Thread-Metric). One worker sends a 16-byte
 * message to a queue and receives it back; the score is round trips a
 * second. */
#include <string.h>

#include "tm.h"

static const rtb_param_def params[] = {TM_PARAMS};

#define MSG 16

static void worker(void *arg)
{
    tm_worker *w = arg;
    rtb_queue *q = w->t->arg;
    unsigned char out[MSG], in[MSG];
    memset(out, 0x5a, sizeof out);
    while (tm_running(w->t)) {
        if (rtb_queue_send(q, out, MSG, 0) != RTB_OK ||
            rtb_queue_receive(q, in, MSG, w->t->ctx->deadline) != MSG)
            break;
        tm_count(w);
    }
}

static rtb_result run(rtb_ctx *ctx)
{
    rtb_queue *q = rtb_mem_calloc(1, sizeof *q);
    if (!q || rtb_queue_create(q, MSG, 4) != RTB_OK) {
        rtb_mem_free(q);
        rtb_emit_check_error(ctx, "setup", "no memory or no queue");
        return RTB_ERROR;
    }
    rtb_result r = tm_one(ctx, &(tm_spec){.fn = worker, .n = 1, .name = "tm-msg", .arg = q});
    rtb_queue_delete(q);
    rtb_mem_free(q);
    return r;
}

const rtb_case rtb_case_tm_msg = {
    .id = "TM-MSG",
    .title = "Throughput: message passing (16-byte queue round trip)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
