/* SPDX-License-Identifier: Apache-2.0 */
/* CLK-DUR: clock tick processing duration. A thread at the top case
 * priority spins reading the timestamp; a step between two reads above a
 * threshold is time taken from it (an interrupt, the tick, a preemption).
 * Every gap's start and length go into preallocated arrays. Afterwards the
 * gaps that recur at one period are found (the tick: its period is
 * detected, not assumed) and reported apart from the others.
 *
 * RT throttling (sched_rt_runtime_us, 950 ms per 1 s by default) stops an
 * RT spinner after 0.95 s of a 1 s period: the spin runs in windows of at
 * most 900 ms with sleeps between them.
 *
 * A stall is not a tick: a gap as long as the tick period (the thread
 * missed a whole tick) or a tick's gap far beyond the tick's own spread
 * (the throttle stops a thread at a tick, so its stall starts on the
 * lattice) goes to the `stall` series with a warning, never into `tick`.
 *
 * A board's RAM (issue 22; a port whose series are streamed,
 * RTB_SERIES_BUFFER): the gap arrays hold BOARD_GAPS gaps (8 KiB; the quick
 * suite's 400 ms at a 1 kHz tick is 400), a gap past them is counted and
 * warned of (`buffer_full`) as at max_samples; period candidates come from
 * the first 64 unclaimed gaps, not 20000 (each period is then refitted
 * over every gap). Everywhere the analysis writes its series one at a
 * time after the checks (streamed: one 2.1 KiB histogram at once, not
 * ten), so the records are those of before, in the same order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "duration_ms", .help = "total spinning time", .def = {400}, .ndef = 1, .min = 1,
     .max = 3600000},
    {.name = "window_ms", .help = "spinning per window (sleeps between windows keep RT "
     "throttling away)", .def = {400}, .ndef = 1, .min = 1, .max = 900},
    {.name = "threshold_ns", .help = "smallest gap recorded; 0 = derived from the read cost",
     .def = {0}, .ndef = 1, .min = 0, .max = 1000000000},
    {.name = "inject_period_us", .help = "self-test: a higher-priority thread on the same CPU "
     "takes inject_us every this long; 0 = off", .def = {0}, .ndef = 1, .min = 0,
     .max = 1000000},
    {.name = "inject_us", .help = "self-test: length of each injected gap", .def = {0},
     .ndef = 1, .min = 0, .max = 100000},
};

#define NEIGHBOURS 8         /* spacings to this many later gaps are period candidates */
/* Candidates come from the first gaps only (a board: 64 gaps, 4 KiB). */
#define MAX_CAND_GAPS (RTB_SERIES_BUFFER ? 64 : 20000)
#define BOARD_GAPS 512        /* the gaps a board records */
#define MIN_PERIOD 50000      /* ns */
#define MAX_PERIOD 100000000  /* ns: HZ=10 */
#define PEAKS 6               /* candidate periods tried per source */
#define MIN_HIT_FRACTION 0.6  /* of a lattice's slots that must hold a gap */
#define MIN_SLOTS 10          /* a source must show at least this many slots */
#define MAX_SOURCES 4         /* recurring sources told apart */

typedef struct dur {
    rtb_ctx *ctx;
    rtb_time threshold, window, total, pause;
    rtb_time *start, *len;
    size_t cap, n;
    uint64_t lost;
    int nwin;
    /* The analysis: sources found, the tick's period, the longest tick. */
    int nsrc;
    rtb_time tick_period, bound;
    size_t *first;        /* first gap of each window (nwin + 1 entries) */
    rtb_time *lo, *hi;    /* each window's spin span */
    rtb_time case_start;  /* ctx->started on the rtb_ts_now timeline */
    rtb_time inj_period, inj_len;
    rtb_time block; /* test builds: the spinner blocks this long once */
    atomic_bool spun;
} dur;

static void spinner(void *arg)
{
    dur *d = arg;
    for (int w = 0; w < d->nwin; w++) {
        if (w)
            rtb_sleep_until(rtb_clock_now() + d->pause);
        char mark[96];
        rtb_time t0 = rtb_ts_now();
        snprintf(mark, sizeof mark, "rtbench CLK-DUR window %d at +%lld ns\n", w,
                 (long long)(t0 - d->case_start));
        rtb_trace_mark(mark);
        d->first[w] = d->n;
        rtb_time left = d->total - (rtb_time)w * d->window;
        rtb_time end = rtb_ts_now() + (left < d->window ? left : d->window);
        rtb_time prev = rtb_ts_now(), t;
        rtb_time block_at = w == 0 && d->block ? prev + (end - prev) / 2 : INT64_MAX;
        d->lo[w] = prev;
        while (prev < end) {
            if (prev >= block_at) { /* test builds (stall=NS): a stall to report */
                rtb_sleep_until(rtb_clock_now() + d->block);
                block_at = INT64_MAX;
            }
            t = rtb_ts_now();
            if (t - prev > d->threshold) {
                if (d->n < d->cap) {
                    d->start[d->n] = prev;
                    d->len[d->n++] = t - prev;
                } else {
                    d->lost++;
                }
            }
            prev = t;
        }
        d->hi[w] = prev;
        if (atomic_load_explicit(&d->ctx->stop, memory_order_relaxed)) {
            d->nwin = w + 1;
            break;
        }
    }
    d->first[d->nwin] = d->n;
    atomic_store(&d->spun, true);
}

/* The self-test's recurring gap: a busy-wait every inj_period. */
static void injector(void *arg)
{
    dur *d = arg;
    rtb_time next = rtb_clock_now() + d->inj_period;
    while (!atomic_load(&d->spun) && next < d->ctx->deadline) {
        rtb_sleep_until(next);
        rtb_time t = rtb_ts_now();
        while (rtb_ts_now() - t < d->inj_len)
            ;
        for (rtb_time now = rtb_clock_now(); next <= now;)
            next += d->inj_period; /* a late wake skips slots, never doubles up */
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* How far from its lattice point a recurring gap may start: interrupt
 * entry and wake-up jitter, small against the period. */
static double tolerance(double period) { return fmin(fmax(5000.0, period / 100), 50000.0); }

typedef struct fit {
    double period;
    uint64_t hits, slots;
    uint64_t fresh; /* hits no earlier source had claimed */
} fit;

/* Whether a gap starts `at` (± tol) after gap i. */
static bool partner(const dur *d, size_t i, size_t end, double at, double tol)
{
    for (size_t j = i + 1; j < end; j++) {
        double s = (double)(d->start[j] - d->start[i]);
        if (s > at + tol)
            return false;
        if (fabs(s - at) <= tol)
            return true;
    }
    return false;
}

/* One window's lattice through `anchor`: marks one gap per slot (an
 * unclaimed one where there is a choice), counts the slots hit and
 * returns how many of them hold an unclaimed gap. Only unclaimed hits
 * move the reference, so an earlier source cannot pull the phase. */
static uint64_t follow(const dur *d, const int *owner, double period, size_t a, size_t b,
                       size_t anchor, bool *hit, int32_t *index, uint64_t *hits)
{
    double tol = tolerance(period);
    rtb_time ref = d->start[anchor];
    int64_t k = 0, last = INT64_MIN;
    size_t last_i = b;
    uint64_t fresh = 0;
    *hits = 0;
    for (size_t i = a; i < b; i++) {
        hit[i] = false;
        double off = (double)(d->start[i] - ref);
        int64_t m = llround(off / period);
        if (fabs(off - (double)m * period) > tol)
            continue;
        int64_t slot = k + m;
        if (slot != last) {
            ++*hits;
        } else if (owner[last_i] >= 0 && owner[i] < 0) {
            hit[last_i] = false;
            fresh--; /* re-counted below */
        } else {
            continue;
        }
        hit[i] = true;
        index[i] = (int32_t)slot;
        last = slot;
        last_i = i;
        fresh += owner[i] < 0;
        if (owner[i] < 0 && i >= anchor) {
            k = slot;
            ref = d->start[i];
        }
    }
    return fresh;
}

#define ANCHORS 4 /* anchors tried per window: a stray gap may sit on the lattice by chance */

/* Marks the gaps that sit on a lattice of `period` and refits the period
 * by least squares of hit time on lattice index. Each window is followed
 * from the unclaimed gap with partners one and two periods on (of the
 * first few) that explains the most unclaimed gaps; every hit moves the
 * reference, so a small period error does not accumulate. Gaps claimed
 * by an earlier source still fill a slot (two sources that fire together
 * make one gap) but count as fresh for neither. */
static fit track(const dur *d, const int *owner, double period, bool *hit, int32_t *index)
{
    fit f = {.period = period};
    double tol = tolerance(period), sxy = 0, sxx = 0;
    for (int w = 0; w < d->nwin; w++) {
        size_t a = d->first[w], b = d->first[w + 1], best = b;
        uint64_t best_fresh = 0, hits = 0;
        f.slots += (uint64_t)((double)(d->hi[w] - d->lo[w]) / period) + 1; /* at most */
        for (size_t i = a, tried = 0; i < b && tried < ANCHORS; i++) {
            if (owner[i] >= 0 || !partner(d, i, b, period, tol) ||
                !partner(d, i, b, 2 * period, tol))
                continue;
            tried++;
            uint64_t fresh = follow(d, owner, period, a, b, i, hit, index, &hits);
            if (fresh > best_fresh) {
                best_fresh = fresh;
                best = i;
            }
        }
        if (best == b) {
            for (size_t i = a; i < b; i++)
                hit[i] = false;
            continue;
        }
        f.fresh += follow(d, owner, period, a, b, best, hit, index, &hits);
        f.hits += hits;
        double sk = 0, st = 0, nk = 0;
        for (size_t i = a; i < b; i++)
            if (hit[i] && owner[i] < 0) {
                sk += (double)index[i];
                st += (double)(d->start[i] - d->start[best]);
                nk++;
            }
        double mk = sk / nk, mt = st / nk;
        for (size_t i = a; i < b; i++)
            if (hit[i] && owner[i] < 0) {
                double dk = (double)index[i] - mk;
                sxy += dk * ((double)(d->start[i] - d->start[best]) - mt);
                sxx += dk * dk;
            }
    }
    if (sxx > 0)
        f.period = sxy / sxx;
    return f;
}

static bool credible(const fit *f)
{
    return f->slots >= MIN_SLOTS && (double)f->hits >= MIN_HIT_FRACTION * (double)f->slots &&
           f->fresh * 3 >= f->hits && (double)f->fresh >= MIN_HIT_FRACTION * MIN_SLOTS;
}

/* The densest clusters of spacings between nearby unclaimed gaps are
 * candidate periods; the credible lattice that explains the most gaps
 * wins (a fraction of the period leaves slots empty, a multiple explains
 * fewer gaps). Leaves `hit` marking the winner's gaps. */
static fit detect_one(const dur *d, const int *owner, bool *hit, int32_t *index, int32_t *c,
                      size_t *cnt, size_t max_gaps)
{
    fit best = {0};
    size_t ncand = 0, used = 0;
    for (int w = 0; w < d->nwin; w++)
        for (size_t i = d->first[w]; i < d->first[w + 1] && used < max_gaps; i++) {
            if (owner[i] >= 0)
                continue;
            used++;
            for (size_t j = i + 1, nb = 0; nb < NEIGHBOURS && j < d->first[w + 1]; j++) {
                if (owner[j] >= 0)
                    continue;
                nb++;
                int64_t s = d->start[j] - d->start[i];
                if (s >= MIN_PERIOD && s <= MAX_PERIOD)
                    c[ncand++] = (int32_t)s; /* <= MAX_PERIOD: exact */
            }
        }
    qsort(c, ncand, sizeof *c, cmp_i32);
    for (size_t a = 0, b = 0; a < ncand; a++) {
        if (b < a)
            b = a;
        while (b < ncand && (double)(c[b] - c[a]) <= tolerance((double)c[a]))
            b++;
        cnt[a] = b - a;
    }
    for (int p = 0; p < PEAKS; p++) {
        size_t top = ncand;
        for (size_t a = 0; a < ncand; a++)
            if (cnt[a] >= 3 && (top == ncand || cnt[a] > cnt[top]))
                top = a;
        if (top == ncand)
            break;
        size_t n = cnt[top];
        double period = (double)c[top + n / 2]; /* the cluster's median */
        for (size_t a = 0; a < ncand; a++) /* overlapping clusters: the same peak */
            if (a + cnt[a] > top && a < top + n)
                cnt[a] = 0;
        fit f = track(d, owner, period, hit, index);
        f = track(d, owner, f.period, hit, index);
        if (credible(&f) && f.hits > best.hits)
            best = f;
    }
    if (best.hits)
        best = track(d, owner, best.period, hit, index);
    return best;
}

/* A second lattice at a period already found is the same source off its
 * phase: gaps of one source whose wake-ups jitter beyond the tolerance
 * (a busy host delays them by more than a percent of the period) form it.
 * Reporting it as another source would name one source twice. */
static int same_period(const fit *src, int nsrc, double period)
{
    for (int k = 0; k < nsrc; k++)
        if (fabs(src[k].period - period) <= tolerance(src[k].period))
            return k;
    return -1;
}

static void merge(fit *into, const fit *f)
{
    uint64_t hits = into->hits + f->hits;
    into->hits = hits < into->slots ? hits : into->slots; /* one source fills a slot once */
    into->fresh += f->fresh;
}

/* Finds up to MAX_SOURCES recurring sources one after the other; owner[i]
 * = the source that claimed gap i, or -1. Its memory is bounded by the
 * gaps recorded (themselves bounded by --max-samples): about 150 bytes a
 * gap, from the case memory (an arena on a port without a heap). -1: no
 * memory for it. */
static int detect(const dur *d, int *owner, fit *src)
{
    int nsrc = 0;
    size_t max_gaps = d->n < MAX_CAND_GAPS ? d->n : MAX_CAND_GAPS;
    bool *hit = rtb_mem_calloc(d->n + 1, sizeof *hit);
    /* A slot of one window (|index| <= 900 ms / MIN_PERIOD) and a spacing
     * (<= MAX_PERIOD) fit 32 bits. */
    int32_t *index = rtb_mem_calloc(d->n + 1, sizeof *index);
    int32_t *c = rtb_mem_calloc(max_gaps * NEIGHBOURS + 1, sizeof *c);
    size_t *cnt = rtb_mem_calloc(max_gaps * NEIGHBOURS + 1, sizeof *cnt);
    for (size_t i = 0; i < d->n; i++)
        owner[i] = -1;
    if (!hit || !index || !c || !cnt)
        nsrc = -1;
    for (int round = 0; nsrc >= 0 && round < MAX_SOURCES; round++) {
        fit f = detect_one(d, owner, hit, index, c, cnt, max_gaps);
        if (!f.hits)
            break;
        int k = same_period(src, nsrc, f.period);
        if (k < 0)
            src[k = nsrc++] = f;
        else
            merge(&src[k], &f);
        for (size_t i = 0; i < d->n; i++)
            if (hit[i] && owner[i] < 0)
                owner[i] = k;
    }
    rtb_mem_free(cnt);
    rtb_mem_free(c);
    rtb_mem_free(index);
    rtb_mem_free(hit);
    if (nsrc < 0)
        return -1;
    /* Most frequent (shortest period) first, renumbering the owners. */
    for (int i = 1; i < nsrc; i++)
        for (int j = i; j > 0 && src[j].period < src[j - 1].period; j--) {
            fit t = src[j];
            src[j] = src[j - 1];
            src[j - 1] = t;
            for (size_t g = 0; g < d->n; g++)
                owner[g] = owner[g] == j ? j - 1 : owner[g] == j - 1 ? j : owner[g];
        }
    return nsrc;
}

static void hz_name(double period, char *out, size_t cap)
{
    static const int common[] = {100, 250, 300, 1000};
    double hz = 1e9 / period;
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
        if (fabs(hz - common[i]) <= 0.01 * common[i]) {
            snprintf(out, cap, "HZ=%d", common[i]);
            return;
        }
    snprintf(out, cap, "%.1f Hz, not a common HZ", hz);
}

static rtb_time auto_threshold(const rtb_ctx *ctx)
{
    rtb_time t = RTB_GAP_THRESHOLD_READS * ctx->timing->clock_read_overhead_ns;
    return t > 1000 ? t : 1000;
}

/* What the check's detail says of a series: its count, exact sum, max. */
typedef struct tally {
    uint64_t n;
    rtb_sum sum;
    int64_t max;
} tally;

static void tally_add(tally *t, int64_t v)
{
    if (!t->n++ || v > t->max)
        t->max = v;
    rtb_sum_add(&t->sum, v);
}

static size_t describe(char *out, size_t cap, const fit *f, const tally *h)
{
    char hz[48];
    hz_name(f->period, hz, sizeof hz);
    int n = snprintf(out, cap, "%.3f ms (%s): %llu of %llu slots hit, mean %.1f us, max %.1f us",
                     f->period / 1e6, hz, (unsigned long long)f->hits,
                     (unsigned long long)f->slots,
                     h->n ? rtb_sum_to_double(&h->sum) / (double)h->n / 1e3 : 0.0,
                     h->n ? (double)h->max / 1e3 : 0.0);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap;
}

/* The median of v[0..n) (reorders it). */
static rtb_time median_of(rtb_time *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
    return n ? v[n / 2] : 0;
}

/* How long a gap of the tick's may be before it is a stall rather than a
 * tick: well beyond the tick's own spread (16x its median, or its median
 * plus 32 robust standard deviations), and never half a tick period. A
 * gap a period long is a stall whoever claimed it. 0: no memory. */
static rtb_time stall_bound(const dur *d, const int *owner, double period, rtb_time *med)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += owner[i] == 0;
    rtb_time *v = rtb_mem_calloc(n + 1, sizeof *v);
    if (!v)
        return 0;
    n = 0;
    for (size_t i = 0; i < d->n; i++)
        if (owner[i] == 0)
            v[n++] = d->len[i];
    *med = median_of(v, n);
    for (size_t i = 0; i < n; i++)
        v[i] = v[i] > *med ? v[i] - *med : *med - v[i];
    double sigma = 1.4826 * (double)median_of(v, n); /* the MAD as a deviation */
    rtb_mem_free(v);
    double bound = fmax(16.0 * (double)*med, (double)*med + 32.0 * sigma);
    return (rtb_time)fmin(bound, period / 2);
}

/* The series the analysis writes, in the order it writes them. */
enum { S_TICK, S_OTHER, S_PERIOD, S_RECURRING, S_GAP, S_GAP_START, S_STALL, S_STALL_START };

/* A gap that is a stall, not a tick (nor another source's). */
static bool stalled(const dur *d, const int *owner, size_t i)
{
    return d->nsrc &&
           (d->len[i] >= d->tick_period || (owner[i] == 0 && d->len[i] > d->bound));
}

/* Whether gap i has a value in series `which` (recurring: source k). */
static bool member(const dur *d, const int *owner, size_t i, int which, int k, int64_t *v)
{
    bool stall = stalled(d, owner, i);
    *v = which == S_GAP_START || which == S_STALL_START ? d->start[i] - d->case_start
                                                        : d->len[i];
    switch (which) {
    case S_TICK: return !stall && owner[i] == 0;
    case S_OTHER: return !stall && owner[i] != 0;
    case S_RECURRING: return !stall && owner[i] == k;
    case S_STALL:
    case S_STALL_START: return stall;
    default: return true; /* S_GAP, S_GAP_START */
    }
}

/* One series made, filled, written and freed: one histogram in RAM at a
 * time (streamed where the port streams: a buffer of samples too). */
static bool emit_one(rtb_ctx *ctx, const dur *d, const int *owner, const fit *src, int which,
                     int k, const char *name, rtb_kind kind, size_t cap)
{
    rtb_series s;
    if (rtb_series_init_streamed(&s, ctx, name, cap) != RTB_OK) {
        rtb_series_free(&s);
        return false;
    }
    rtb_series_set_kind(&s, kind);
    /* The period is measured, so it differs from run to run: the rank
     * (most frequent first) identifies the source, the period is shown.
     * Set before the first push: a chunk sent early carries it too. */
    if (which == S_RECURRING)
        rtb_series_set_point(&s, "rank", k);
    if (which == S_PERIOD) {
        if (d->nsrc) /* empty when no tick was found */
            rtb_series_push(&s, llround(src[0].period));
    } else {
        for (size_t i = 0; i < d->n; i++) {
            int64_t v;
            if (member(d, owner, i, which, k, &v)) {
                rtb_series_push(&s, v);
                rtb_series_drain(&s); /* after the spin: nothing is measured */
            }
        }
    }
    if (which == S_RECURRING) {
        rtb_tags period = {.attr_key = "period_ns", .attr_value = llround(src[k].period)};
        rtb_emit_series_tagged(ctx, &s, &period);
    } else {
        rtb_emit_series(ctx, &s);
    }
    rtb_series_free(&s);
    return true;
}

#define DETAIL 900

static rtb_result report(rtb_ctx *ctx, dur *d)
{
    int *owner = rtb_mem_calloc(d->n + 1, sizeof *owner);
    fit *src = rtb_mem_calloc(MAX_SOURCES, sizeof *src); /* the frame is at its limit */
    int nsrc = owner && src ? detect(d, owner, src) : -1;
    /* Neither on the stack (the frame is at its limit) nor static (a
     * board's RAM in every case): from the case's memory. */
    char *detail = nsrc >= 0 ? rtb_mem_alloc(DETAIL) : NULL;
    rtb_result r = RTB_PASSED;
    if (!detail) {
        rtb_emit_check_error(ctx, "buffer", "no memory to analyse %llu gaps",
                             (unsigned long long)d->n);
        r = RTB_ERROR;
        goto out;
    }
    d->nsrc = nsrc;
    rtb_time tick_med = 0;
    d->bound = INT64_MAX;
    d->tick_period = nsrc ? llround(src[0].period) : 0;
    if (nsrc && !(d->bound = stall_bound(d, owner, src[0].period, &tick_med))) {
        rtb_emit_check_error(ctx, "buffer", "no memory to analyse %llu gaps",
                             (unsigned long long)d->n);
        r = RTB_ERROR;
        goto out;
    }
    /* The figures the detail and warnings give (the series' own). */
    tally tk = {0}, other = {0}, stall = {0}, rec[MAX_SOURCES] = {{0}};
    size_t worst = d->n;
    for (size_t i = 0; i < d->n; i++) {
        if (stalled(d, owner, i)) {
            tally_add(&stall, d->len[i]);
            if (worst == d->n || d->len[i] > d->len[worst])
                worst = i;
        } else {
            tally_add(owner[i] == 0 ? &tk : &other, d->len[i]);
            if (owner[i] > 0)
                tally_add(&rec[owner[i]], d->len[i]);
        }
    }
    rtb_time spun = 0;
    for (int w = 0; w < d->nwin; w++)
        spun += d->hi[w] - d->lo[w];
    if (nsrc) {
        size_t len = (size_t)snprintf(detail, DETAIL, "in %.0f ms: tick ", (double)spun / 1e6);
        len += describe(detail + len, DETAIL - len, &src[0], &tk);
        for (int i = 1; i < nsrc && len < DETAIL; i++) {
            len += (size_t)snprintf(detail + len, DETAIL - len, "; also recurring ");
            if (len < DETAIL)
                len += describe(detail + len, DETAIL - len, &src[i], &rec[i]);
        }
        if (len < DETAIL)
            snprintf(detail + len, DETAIL - len, "; %llu gaps besides the tick's, max %.1f us "
                     "(threshold %lld ns); %llu stalls", (unsigned long long)other.n,
                     other.n ? (double)other.max / 1e3 : 0.0, (long long)d->threshold,
                     (unsigned long long)stall.n);
        if (ctx->port->realtime)
            rtb_emit_check(ctx, "tick", true, "%s", detail);
        else
            rtb_emit_check_skip(ctx, "tick", "needs real-time priority (other threads' "
                                "time slices are gaps too): %s", detail);
        if (nsrc > 1)
            rtb_warn(ctx, "recurring", "gaps recur at %d periods; `tick` is the most frequent. "
                     "Under a hypervisor the host's timer recurs too: the kernel trace "
                     "(local_timer events against gap_start) tells which is this kernel's tick",
                     nsrc);
    } else {
        rtb_warn(ctx, "no_tick", "no gaps recur at one period among %llu gaps in %.0f ms: a "
                 "tickless CPU (nohz_full), or ticks shorter than the threshold (%lld ns)",
                 (unsigned long long)d->n, (double)spun / 1e6, (long long)d->threshold);
    }
    if (stall.n)
        rtb_warn(ctx, "stall", "stalls, not ticks: %llu gaps in which the measuring thread "
                 "did not run, up to %.3f ms (at +%.3f s), longer than the tick period (%.3f ms) or "
                 "than the tick's spread allows (%.1f us; its median %.1f us). Likely causes: "
                 "RT throttling (sched_rt_runtime_us below sched_rt_period_us stops real-time "
                 "threads until the period ends), a higher-priority thread, or a hypervisor "
                 "not running this CPU; --trace tells which", (unsigned long long)stall.n,
                 (double)d->len[worst] / 1e6, (double)(d->start[worst] - d->case_start) / 1e9,
                 (double)d->tick_period / 1e6, (double)d->bound / 1e3, (double)tick_med / 1e3);
    if (d->lost)
        rtb_warn(ctx, "buffer_full", "%llu gaps not recorded: raise --max-samples or "
                 "threshold_ns", (unsigned long long)d->lost);
    size_t cap = d->n ? d->n : 1;
    bool ok = emit_one(ctx, d, owner, src, S_TICK, 0, "tick", RTB_KIND_LATENCY, cap) &&
              emit_one(ctx, d, owner, src, S_OTHER, 0, "other", RTB_KIND_LATENCY, cap) &&
              emit_one(ctx, d, owner, src, S_PERIOD, 0, "tick_period", RTB_KIND_PERIOD, 1);
    for (int k = 1; ok && k < nsrc; k++)
        ok = emit_one(ctx, d, owner, src, S_RECURRING, k, "recurring", RTB_KIND_LATENCY, cap);
    /* When each gap began; a stall is time the thread lost, not the cost
     * of an OS path. */
    ok = ok && emit_one(ctx, d, owner, src, S_GAP, 0, "gap", RTB_KIND_LATENCY, cap) &&
         emit_one(ctx, d, owner, src, S_GAP_START, 0, "gap_start", RTB_KIND_TIMESTAMP, cap) &&
         emit_one(ctx, d, owner, src, S_STALL, 0, "stall", RTB_KIND_DURATION, cap) &&
         emit_one(ctx, d, owner, src, S_STALL_START, 0, "stall_start", RTB_KIND_TIMESTAMP, cap);
    if (!ok) {
        rtb_emit_check_error(ctx, "buffer", "no memory to analyse %llu gaps",
                             (unsigned long long)d->n);
        r = RTB_ERROR;
    }
out:
    rtb_mem_free(detail);
    rtb_mem_free(src);
    rtb_mem_free(owner);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    dur d = {.ctx = ctx};
    int64_t ms = rtb_param(ctx, "duration_ms"), win = rtb_param(ctx, "window_ms");
    d.total = ms * 1000000;
    d.window = win * 1000000;
    d.pause = d.window / 4 > 100000000 ? d.window / 4 : 100000000;
    d.nwin = (int)((ms + win - 1) / win);
    d.threshold = rtb_param(ctx, "threshold_ns");
    if (!d.threshold)
        d.threshold = auto_threshold(ctx);
    d.inj_period = rtb_param(ctx, "inject_period_us") * 1000;
    d.inj_len = rtb_param(ctx, "inject_us") * 1000;
    d.block = RTB_INJECT_VALUE(RTB_INJ_STALL);
    /* One gap per 10 µs of spinning is far more than any machine shows. */
    d.cap = (size_t)ms * 100 + 1000;
    if (d.cap > ctx->opt->max_samples)
        d.cap = ctx->opt->max_samples;
    if (RTB_SERIES_BUFFER && d.cap > BOARD_GAPS)
        d.cap = BOARD_GAPS; /* a board's RAM: more are counted as lost, and warned of */
    d.start = rtb_mem_calloc(d.cap, sizeof *d.start);
    d.len = rtb_mem_calloc(d.cap, sizeof *d.len);
    d.first = rtb_mem_calloc((size_t)d.nwin + 1, sizeof *d.first);
    d.lo = rtb_mem_calloc((size_t)d.nwin, sizeof *d.lo);
    d.hi = rtb_mem_calloc((size_t)d.nwin, sizeof *d.hi);
    rtb_result r = RTB_ERROR;
    if (!d.start || !d.len || !d.first || !d.lo || !d.hi) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu gaps", (unsigned long long)d.cap);
        goto out;
    }
    for (size_t i = 0; i < d.cap; i++) /* prefault */
        d.start[i] = d.len[i] = 0;
    d.case_start = rtb_ts_now() - (rtb_clock_now() - ctx->started);

    /* The spinner takes the top case priority; the self-test's injector
     * must preempt it, so then the spinner steps one below. */
    bool inject = d.inj_period && d.inj_len;
    int top = RTB_PRIO_MAX - 2;
    rtb_thread th[2];
    int nth = 0;
    rtb_thread_attr as = rtb_attr(ctx, "clk-dur", top - (inject ? 1 : 0) - ctx->opt->priority);
    rtb_thread_attr ai = rtb_attr(ctx, "clk-inject", top - ctx->opt->priority);
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    if (inject && rtb_thread_create(&th[nth], &ai, injector, &d) == RTB_OK)
        nth++;
    if (rtb_thread_create(&th[nth], &as, spinner, &d) == RTB_OK) {
        nth++;
    } else {
        atomic_store(&d.spun, true);
        rtb_emit_check_error(ctx, "thread", "could not create the spinning thread");
    }
    int rc = rtb_join_all(ctx, th, nth);
    if (rc == RTB_OK && nth == 1 + inject)
        r = report(ctx, &d);
out:
    rtb_mem_free(d.start);
    rtb_mem_free(d.len);
    rtb_mem_free(d.first);
    rtb_mem_free(d.lo);
    rtb_mem_free(d.hi);
    return r;
}

const rtb_case rtb_case_clk_dur = {
    .id = "CLK-DUR",
    .title = "Clock tick processing duration",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
