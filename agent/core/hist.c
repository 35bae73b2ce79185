/* SPDX-License-Identifier: Apache-2.0 */
/* Histograms with exact n/min/max/sum beside the buckets (the layouts are
 * specified in docs/wire-format.md). Cheap enough for measured sections. */
#include <string.h>

#include "rtb.h"

static void reset(rtb_hist *h)
{
    h->n = h->underflow = h->overflow = 0;
    h->min = INT64_MAX;
    h->max = INT64_MIN;
    h->sum = (rtb_sum){0, 0};
    if (h->counts)
        memset(h->counts, 0, RTB_HIST_MAX_BUCKETS * sizeof *h->counts);
}

void rtb_hist_init_log2(rtb_hist *h, int sub_bits)
{
    if (sub_bits < 1)
        sub_bits = 1;
    /* Indices reach (64 - sub_bits) << sub_bits: keep them in the array,
     * down to RTB_HIST_LOG2_MIN_SUB_BITS; below it the resolution stays and
     * the values past the array's top bucket count as overflow (the record
     * then says its buckets). */
    while (sub_bits > RTB_HIST_LOG2_MIN_SUB_BITS &&
           ((64 - sub_bits) << sub_bits) + (2 << sub_bits) > RTB_HIST_MAX_BUCKETS)
        sub_bits--;
    h->kind = RTB_HIST_LOG2;
    h->sub_bits = sub_bits;
    h->nbuckets = RTB_HIST_MAX_BUCKETS;
    reset(h);
}

void rtb_hist_init_linear(rtb_hist *h, int64_t lo, int64_t width, int nbuckets)
{
    h->kind = RTB_HIST_LINEAR;
    h->lo = lo;
    h->width = width > 0 ? width : 1;
    h->nbuckets = nbuckets > RTB_HIST_MAX_BUCKETS ? RTB_HIST_MAX_BUCKETS : nbuckets;
    reset(h);
}

/* Saturating: a 32-bit counter (RTB_HIST_COUNT32) stops at its top rather
 * than wrap to a small count; n stays exact beside it. */
static inline void count(rtb_hist_count *c)
{
    if (*c != (rtb_hist_count)-1)
        (*c)++;
}

static int log2_index(uint64_t v, int s)
{
    int k = 63 - __builtin_clzll(v | 1);
    int shift = k > s ? k - s : 0;
    return (shift << s) + (int)(v >> shift);
}

void rtb_hist_add(rtb_hist *h, int64_t v)
{
    h->n++;
    rtb_sum_add(&h->sum, v);
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    if (h->kind == RTB_HIST_LOG2) {
        if (v < 0) {
            h->underflow++;
            return;
        }
        int i = log2_index((uint64_t)v, h->sub_bits);
        if (i >= h->nbuckets)
            h->overflow++;
        else
            count(&h->counts[i]);
        return;
    }
    if (v < h->lo) {
        h->underflow++;
        return;
    }
    /* Unsigned: v - lo can exceed INT64_MAX when lo is negative. */
    uint64_t i = ((uint64_t)v - (uint64_t)h->lo) / (uint64_t)h->width;
    if (i >= (uint64_t)h->nbuckets)
        h->overflow++;
    else
        count(&h->counts[i]);
}
