/* SPDX-License-Identifier: Apache-2.0 */
/* Writes one record of every kind with extreme values and hostile strings,
 * through the agent's own JSON and stream writers; tests/agent/
 * test_roundtrip.py parses it with the host and compares every value. */
#include <stdint.h>
#include <string.h>

#include "rtb.h"

static const char *const hostile = "q\"uote b\\ack nl\nnl tab\t cr\r ctl\x01\x1f del\x7f "
                                   "utf8 \xc2\xb5s \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac";

static const int64_t extremes[] = {0, INT64_MAX, INT64_MIN, -1, 1, INT64_MAX, INT64_MIN, 0, 42};

static rtb_result noop(rtb_ctx *ctx)
{
    (void)ctx;
    return RTB_PASSED;
}

static const rtb_case fake = {.id = "RT-TRIP", .title = "round trip", .run = noop};

int main(void)
{
    static rtb_stream s;
    rtb_stream_init(&s, stdout);
    rtb_options opt = {.cpu = 0, .priority = 1, .samples = true, .max_samples = 4096};
    rtb_ctx ctx = {.stream = &s, .opt = &opt, .cur = NULL};

    rtb_json *j = rtb_rec_begin(&s, "hello");
    rtb_json_i64(j, "format", RTB_STREAM_FORMAT);
    rtb_json_str(j, "agent", hostile);
    rtb_json_obj(j, "realtime");
    rtb_json_bool(j, "ok", true);
    rtb_json_obj_end(j);
    rtb_json_u64(j, "u64_max", UINT64_MAX);
    rtb_json_i64(j, "i64_min", INT64_MIN);
    rtb_json_i64(j, "i64_max", INT64_MAX);
    rtb_json_i64(j, "zero", 0);
    rtb_rec_end(&s);

    rtb_warn(&ctx, "run_wide", "%s", hostile);
    ctx.cur = &fake;
    j = rtb_rec_begin(&s, "begin");
    rtb_json_str(j, "case", fake.id);
    rtb_json_str(j, "title", hostile);
    rtb_json_obj(j, "params");
    rtb_json_i64(j, "lo", INT64_MIN);
    rtb_json_i64(j, "hi", INT64_MAX);
    rtb_json_obj_end(j);
    rtb_rec_end(&s);

    /* A series longer than one samples chunk, with extreme deltas. */
    static rtb_series x;
    rtb_series_init(&x, "extremes", 4096);
    rtb_series_set_point(&x, "n", INT64_MAX);
    for (int rep = 0; rep < 100; rep++)
        for (size_t i = 0; i < sizeof extremes / sizeof extremes[0]; i++)
            rtb_series_push(&x, extremes[i]);
    rtb_emit_series(&ctx, &x);
    rtb_series_free(&x);

    /* A linear histogram with a negative origin and both tails used. */
    static rtb_series lin;
    rtb_series_init(&lin, "linear", 16);
    rtb_hist_init_linear(&lin.hist, -1000, 100, 20);
    const int64_t lv[] = {-5000, -1000, -901, 0, 999, 1000, INT64_MAX};
    for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++)
        rtb_series_push(&lin, lv[i]);
    rtb_emit_series(&ctx, &lin);
    rtb_series_free(&lin);

    rtb_emit_check(&ctx, "hostile", true, "%s", hostile);
    rtb_emit_check(&ctx, "failing", false, "detail");
    rtb_emit_check_error(&ctx, "broken", "err");
    rtb_warn(&ctx, "clamped", "%s", hostile);
    /* A detail past RTB_JSON_TEXT_CAP, formatted into the record's own body
     * and escaped below it: its first 1023 bytes, control bytes escaped. */
    static char longer[1500];
    for (size_t i = 0; i + 1 < sizeof longer; i++)
        longer[i] = i % 7 == 6 ? '\x01' : (char)('a' + i % 7);
    rtb_emit_check(&ctx, "long", true, "%s", longer);

    /* A string far larger than a record: clipped, still valid JSON/UTF-8. */
    static char big[RTB_BODY_CAP * 5 / 2 + 1]; /* whatever the port's body cap */
    for (size_t i = 0; i + 3 < sizeof big; i += 3)
        memcpy(big + i, "\xe2\x9c\x93", 3);
    big[sizeof big - 1] = '\0';
    j = rtb_rec_begin(&s, "warn");
    rtb_json_str(j, "code", "big");
    rtb_json_str(j, "case", fake.id);
    rtb_json_str(j, "detail", big);
    rtb_json_str(j, "after", "dropped when the body is full");
    rtb_rec_end(&s);

    j = rtb_rec_begin(&s, "end");
    rtb_json_str(j, "case", fake.id);
    rtb_json_str(j, "result", "failed");
    rtb_json_i64(j, "duration_ns", INT64_MAX);
    rtb_json_str(j, "reason", hostile);
    rtb_rec_end(&s);
    j = rtb_rec_begin(&s, "bye");
    rtb_json_str(j, "result", "failed");
    rtb_json_u64(j, "records", s.seq + 1);
    rtb_rec_end(&s);
    return 0;
}
