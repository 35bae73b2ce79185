/* SPDX-License-Identifier: Apache-2.0 */
/* CAL-REF: the hardware calibration unit T_std. A fixed chain of K 2x2
 * double-precision matrix products, timed `repeats` times; T_std is the
 * mean, and every indicator also gets score = indicator / T_std so results
 * from different hardware can be set side by side. K is a constant of the
 * suite, never tuned per machine: changing it changes every score. */
#include "../core/rtb.h"

#define RTB_REF_K 1000

static const rtb_param_def params[] = {
    {.name = "repeats", .help = "timed repetitions (T_std is their mean)", .def = {100},
     .ndef = 1, .min = 10, .max = 1000000},
};

/* volatile: the compiler must neither know the inputs nor drop the result. */
static volatile double seed[4] = {1.0, 0.5, -0.25, 2.0};
static volatile double sink;

static double workload(void)
{
    double a = seed[0], b = seed[1], c = seed[2], d = seed[3];
    /* A rotation by a 3-4-5 angle: the norm stays put, so no overflow or
     * denormals however long the chain. */
    const double r00 = 0.6, r01 = -0.8, r10 = 0.8, r11 = 0.6;
    for (int k = 0; k < RTB_REF_K; k++) {
        double na = a * r00 + b * r10, nb = a * r01 + b * r11;
        double nc = c * r00 + d * r10, nd = c * r01 + d * r11;
        a = na, b = nb, c = nc, d = nd;
    }
    RTB_INJECT_DELAY(RTB_INJ_REF_DELAY);
    return a + b + c + d;
}

static rtb_result run(rtb_ctx *ctx)
{
    int64_t repeats = rtb_param(ctx, "repeats");
    rtb_series s;
    if (rtb_series_init(&s, "t_std", (size_t)repeats) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %lld samples", (long long)repeats);
        return RTB_ERROR;
    }
    rtb_series_set_kind(&s, RTB_KIND_DURATION); /* the calibration unit, no OS cost */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    for (int i = 0; i < 10; i++) /* warm caches and branch predictors */
        sink = workload();
    for (int64_t i = 0; i < repeats && !atomic_load(&ctx->stop); i++) {
        rtb_stamp t0 = rtb_stamp_now();
        double r = workload();
        rtb_stamp t1 = rtb_stamp_now();
        sink = r;
        rtb_series_push(&s, rtb_stamp_ns(t1 - t0));
    }
    rtb_emit_series(ctx, &s);
    rtb_series_free(&s);
    return RTB_PASSED;
}

const rtb_case rtb_case_cal_ref = {
    .id = "CAL-REF",
    .title = "Hardware calibration unit T_std (2x2 matrix chain, K=1000)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .unscored = true,
};
