/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "rtb.h"

int rtb_series_init(rtb_series *s, const char *name, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->name = name;
    rtb_series_set_kind(s, RTB_KIND_LATENCY);
    s->hist.counts = rtb_mem_alloc(RTB_HIST_MAX_BUCKETS * sizeof *s->hist.counts);
    if (!s->hist.counts)
        return RTB_ENOMEM;
    rtb_hist_init_log2(&s->hist, 5);
    if (cap) {
        s->v = rtb_mem_alloc(cap * sizeof *s->v);
        if (!s->v) {
            rtb_series_free(s);
            return RTB_ENOMEM;
        }
        /* Touch every page now so the measured section takes no fault. */
        memset(s->v, 0, cap * sizeof *s->v);
        s->cap = cap;
    }
    return RTB_OK;
}

int rtb_series_init_streamed(rtb_series *s, rtb_ctx *ctx, const char *name, size_t cap)
{
    size_t buffered = RTB_SERIES_BUFFER && RTB_SERIES_BUFFER < cap ? RTB_SERIES_BUFFER : cap;
    int rc;
    int64_t inj = RTB_INJECT_VALUE(RTB_INJ_SERIES_BUFFER);
    if (inj > 0) {
        /* The test build's series_buffer=N sends every N samples out of a
         * buffer of the whole series, cleared as a held one is: a run
         * streamed in chunks then does what one that holds everything does
         * up to its measured windows (the known answer compares them). */
        rc = rtb_series_init(s, name, cap);
        buffered = (size_t)inj < cap ? (size_t)inj : cap;
        s->cap = rc == RTB_OK ? buffered : 0;
    } else {
        rc = rtb_series_init(s, name, buffered);
    }
    s->stream_ctx = ctx;
    s->buffered = buffered;
    s->limit = cap;
    return rc;
}

void rtb_series_set_point(rtb_series *s, const char *key, int64_t value)
{
    s->point_key = key;
    s->point_value = value;
}

static const struct {
    const char *name, *unit;
} kinds[RTB_KIND_COUNT_OF_KINDS] = {
    [RTB_KIND_LATENCY] = {"latency", "ns"},     [RTB_KIND_DURATION] = {"duration", "ns"},
    [RTB_KIND_TIMESTAMP] = {"timestamp", "ns"}, [RTB_KIND_COUNT] = {"count", "count"},
    [RTB_KIND_RATE] = {"rate", "Hz"},           [RTB_KIND_PERIOD] = {"period", "ns"},
    [RTB_KIND_RATIO] = {"ratio", ""},
};

const char *rtb_kind_name(rtb_kind kind)
{
    return kind < RTB_KIND_COUNT_OF_KINDS ? kinds[kind].name : "latency";
}

const char *rtb_kind_unit(rtb_kind kind)
{
    return kind < RTB_KIND_COUNT_OF_KINDS ? kinds[kind].unit : "ns";
}

void rtb_series_set_kind(rtb_series *s, rtb_kind kind)
{
    s->kind = kind < RTB_KIND_COUNT_OF_KINDS ? kind : RTB_KIND_LATENCY;
}

void rtb_series_free(rtb_series *s)
{
    /* In reverse order of allocation: an arena takes back its top. */
    rtb_mem_free(s->v);
    rtb_mem_free(s->hist.counts);
    s->v = NULL;
    s->hist.counts = NULL;
    s->cap = s->n = 0;
}
