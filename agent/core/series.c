/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "rtb.h"

int rtb_series_init(rtb_series *s, const char *name, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->name = name;
    s->unit = "ns";
    s->cap = cap;
    if (cap) {
        s->v = malloc(cap * sizeof *s->v);
        if (!s->v)
            return RTB_ENOMEM;
        /* Touch every page now so the measured section takes no fault. */
        memset(s->v, 0, cap * sizeof *s->v);
    }
    rtb_hist_init_log2(&s->hist, 5);
    return RTB_OK;
}

void rtb_series_set_point(rtb_series *s, const char *key, int64_t value)
{
    s->point_key = key;
    s->point_value = value;
}

void rtb_series_free(rtb_series *s)
{
    free(s->v);
    s->v = NULL;
    s->cap = s->n = 0;
}
