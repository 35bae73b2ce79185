/* SPDX-License-Identifier: Apache-2.0 */
/* JIT-PER: periodic release jitter. A real-time task sleeps until absolute
 * release times next += period and records, per release, its wake-up
 * latency (actual - planned) and the interval since the previous release.
 * The published kernel-preemption study reads the interval distribution
 * against the period: shorter / equal / longer, and a table of
 * |deviation| in µs. Lower-priority kernel-load threads on the same CPU
 * give the kernel non-preemptible work to do meanwhile.
 *
 * A release that comes after the next planned one is an overrun; the
 * missed slots are skipped (as cyclictest does), so a stall shows as one
 * long latency and one long interval rather than a burst of back-to-back
 * releases that would pass for "shorter" intervals.
 *
 * Everything is read from rtb_clock_now, the clock the schedule runs on:
 * against the raw measurement clock an NTP-slewed schedule would show a
 * deviation of up to 500 ppm (5 µs per 10 ms) that is not jitter.
 *
 * Releases are planned on the port's release lattice (rtb_release_grain:
 * the tick on a tick-based kernel) and a latency runs from the lattice
 * instant at or after the planned time, the earliest the kernel could
 * release: otherwise a 1 ms tick shows the schedule's phase against the
 * tick (anything up to 1 ms) as latency. The series say which reference
 * they used (attrs.release_grain_ns, 0: the planned time itself).
 *
 * A board's RAM holds RTB_SERIES_BUFFER samples a series
 * (rtb_series_init_streamed): when the latency's buffer is full the task
 * sends the three buffers after its release and before it sleeps, and the
 * periods that sending took are paused: skipped, as an overrun's are, but
 * counted apart and said in the `releases` check (sending 128 samples of
 * three series took 1.5 ms on FreeRTOS under -icount: done inside the
 * schedule, the next release was 456 us late). No interval spans a pause.
 * Where the buffer holds the whole series (POSIX) nothing is sent before
 * the end and a run longer than max_samples keeps its last samples (a
 * ring); a streamed one keeps its first max_samples. */
#include <stdlib.h>

#include "../core/rtb.h"
#include "rtb/load.h"

static const rtb_param_def params[] = {
    {.name = "period_us", .help = "release period", .def = {10000}, .ndef = 1, .min = 100,
     .max = 10000000},
    {.name = "cycles", .help = "planned releases (periods)", .def = {5000}, .ndef = 1, .min = 2,
     .max = 1000000000},
    {.name = "duration_ms", .help = "time cap: stop after this long even if periods remain "
     "(0: no cap, run every period)", .def = {0}, .ndef = 1, .min = 0, .max = 86400000},
    {.name = "load_threads", .help = "background kernel-load threads at normal priority (0: none)",
     .def = {2}, .ndef = 1, .min = 0, .max = 64},
    {.name = "blocker_us", .help = "self-test: a higher-priority thread on the same CPU "
     "holds it this long over a few random releases; 0 = off", .def = {0}, .ndef = 1,
     .min = 0, .max = 10000000},
    {.name = "blocker_count", .help = "self-test: how many releases the blocker holds up",
     .def = {3}, .ndef = 1, .min = 1, .max = 64},
};

/* Deviation histogram: whole µs from -1023 to +1023, one bucket each, so
 * the study's table (0, 1-9, 10-99 µs, 10 µs bins) comes exactly from the
 * buckets; beyond ±1023 µs is under/overflow, the exact min/max remain. */
#define DEV_US 1023

typedef struct blocker {
    rtb_time start, period, stop_at, hold;
    rtb_time grain, phase; /* the port's release lattice */
    /* blocker_count of each (none when off: 1.5 KiB a board's RAM lacked),
     * after the struct */
    int64_t *at;      /* schedule slots the blocker holds up, ascending */
    int64_t *release; /* which release served each slot (-1: skipped) */
    rtb_time *latency;
    int n;
    atomic_bool done;
} blocker;

/* Sleeps until just before slot k, then holds the CPU until slot k + hold:
 * the release for slot k cannot run before then, so its latency >= hold. */
static void blocker_main(void *arg)
{
    blocker *b = arg;
    rtb_time margin = b->period / 2 < 1000000 ? b->period / 2 : 1000000;
    for (int i = 0; i < b->n && !atomic_load(&b->done); i++) {
        rtb_time planned = rtb_on_grain(b->start + b->at[i] * b->period, b->grain, b->phase);
        if (planned > b->stop_at)
            break;
        rtb_sleep_until(planned - margin);
        while (rtb_clock_now() < planned + b->hold && !atomic_load(&b->done))
            ;
    }
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The study's figures, counted on the target too so the check detail is
 * exact whatever the sample cap. */
typedef struct tally {
    uint64_t shorter, equal, longer, early, overrun, skipped, paused, pauses;
    uint64_t cat[4]; /* |deviation| 0, 1-9, 10-99, >= 100 µs */
} tally;

static int64_t trunc_us(int64_t ns) { return ns / 1000 * 1000; /* toward zero */ }

static void count_interval(tally *t, int64_t dev)
{
    int64_t us = (dev < 0 ? -dev : dev) / 1000;
    if (us == 0)
        t->equal++;
    else if (dev < 0)
        t->shorter++;
    else
        t->longer++;
    t->cat[us == 0 ? 0 : us < 10 ? 1 : us < 100 ? 2 : 3]++;
}

/* Live figures for the progress record: a seqlock, written by the periodic
 * task after each release and read by the monitor (no 64-bit atomics: a
 * 32-bit target without libatomic runs this too). */
typedef struct live {
    atomic_uint seq;
    int64_t n, last, max, sum;
} live;

static void live_add(live *l, int64_t v)
{
    unsigned s = atomic_load_explicit(&l->seq, memory_order_relaxed);
    atomic_store_explicit(&l->seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    l->n++;
    l->last = v;
    l->sum += v;
    if (l->n == 1 || v > l->max)
        l->max = v;
    atomic_store_explicit(&l->seq, s + 2, memory_order_release);
}

static live live_read(live *l)
{
    live out;
    unsigned a, b;
    do {
        a = atomic_load_explicit(&l->seq, memory_order_acquire);
        out.n = l->n;
        out.last = l->last;
        out.max = l->max;
        out.sum = l->sum;
        atomic_thread_fence(memory_order_acquire);
        b = atomic_load_explicit(&l->seq, memory_order_relaxed);
    } while (a != b || (a & 1));
    return out;
}

/* The first latency over --break, wherever it happened. */
typedef struct brk {
    atomic_int taken;
    int cpu;
    int64_t index, value;
    rtb_time at; /* the release, since the case began */
} brk;

#define NEAR 8

/* The k-th newest sample kept (0: the newest) of a series used as a ring. */
static int64_t ring_back(const rtb_series *s, size_t head, size_t k)
{
    if (s->n < s->cap)
        return s->v[s->n - 1 - k];
    return s->v[(head + s->cap - 1 - k) % s->cap];
}

/* The last `cap` samples of a run of any length, the newest (the one that
 * broke the run) always among them: the series' buffer used as a ring. */
static inline void push_ring(rtb_series *s, size_t *head, int64_t v)
{
    if (s->n < s->cap) {
        s->v[s->n++] = v;
    } else if (s->cap) {
        s->v[*head] = v;
        *head = *head + 1 == s->cap ? 0 : *head + 1;
        s->dropped++;
    } else {
        s->dropped++;
    }
    rtb_hist_add(&s->hist, v);
}

static void reverse(int64_t *v, size_t lo, size_t hi)
{
    for (; lo + 1 < hi; lo++, hi--) {
        int64_t t = v[lo];
        v[lo] = v[hi - 1];
        v[hi - 1] = t;
    }
}

/* After the run: oldest first, as rtb_emit_series writes them. */
static void unroll(rtb_series *s, size_t head)
{
    reverse(s->v, 0, head);
    reverse(s->v, head, s->n);
    reverse(s->v, 0, s->n);
}

typedef struct per {
    rtb_ctx *ctx;
    brk *brk;
    rtb_sem *done, *go;
    int cpu; /* where this periodic task runs (-1: unpinned) */
    rtb_time start, period, stop_at;
    rtb_time grain, phase; /* the port's release lattice */
    int64_t cycles, slot, released;
    rtb_series lat, iv, dev;
    size_t head[3]; /* ring positions of lat, iv, dev */
    /* The largest latency and the releases around it, whatever the ring
     * kept: NEAR before it, the max, NEAR after (as they come). */
    int64_t near[2 * NEAR + 1];
    int64_t max_at; /* release index of the max */
    int64_t recent[NEAR]; /* streamed: the last NEAR latencies (the buffer is sent) */
    int nbefore, nafter;
    tally t;
    blocker *b; /* the first CPU's task only */
    live live;
    rtb_load *load;
} per;

/* A latency over the threshold: the sample is already in the series (it
 * is the last one), the trace stops at once so what led to it stays in the
 * kernel's buffer, and every periodic task ends at its next wake-up. */
static void broke(per *p, rtb_time planned, rtb_time w)
{
    brk *k = p->brk;
    if (atomic_exchange(&k->taken, 1))
        return;
    k->cpu = p->cpu;
    k->index = (int64_t)p->lat.hist.n - 1;
    k->value = w - planned;
    k->at = planned - p->ctx->started;
    char mark[160];
    snprintf(mark, sizeof mark, "rtbench break %s cpu=%d latency=%lld since=%lld\n",
             p->ctx->cur->id, p->cpu, (long long)k->value,
             (long long)(rtb_clock_now() - planned));
    rtb_trace_mark(mark);
    rtb_trace_stop();
    atomic_store(&p->ctx->stop, true);
}

/* A series whose buffer holds less than the series: sent as it fills. */
static bool streamed(const rtb_series *s) { return s->buffered < s->limit; }

/* After a release, before the next sleep, when the latency's buffer is
 * full: the three go out and the periods that took are skipped. Returns
 * true when it paused (the next release has no interval). */
static bool send_full(per *p, rtb_time *next)
{
    if (!streamed(&p->lat) || p->lat.n < p->lat.cap || !p->lat.cap || p->slot >= p->cycles)
        return false; /* the last ones go with the series at the end */
    rtb_series_flush(&p->lat);
    rtb_series_flush(&p->iv);
    rtb_series_flush(&p->dev);
    p->t.pauses++;
    for (rtb_time now = rtb_clock_now(); *next <= now && p->slot < p->cycles;
         *next += p->period, p->slot++)
        p->t.paused++;
    return true;
}

/* Outside the hot path but for a new maximum: a copy of NEAR values. */
static void note_max(per *p, bool top, int64_t v)
{
    bool sent = streamed(&p->lat);
    if (top) {
        size_t kept = sent ? (size_t)p->lat.hist.n - 1 : p->lat.n - 1; /* before this one */
        p->nbefore = kept < NEAR ? (int)kept : NEAR;
        for (int k = 0; k < p->nbefore; k++)
            p->near[p->nbefore - 1 - k] =
                sent ? p->recent[(p->lat.hist.n - 2 - (uint64_t)k) % NEAR]
                     : ring_back(&p->lat, p->head[0], (size_t)k + 1);
        p->near[p->nbefore] = v;
        p->nafter = 0;
        p->max_at = (int64_t)p->lat.hist.n - 1;
    } else if (p->nafter < NEAR && (int64_t)p->lat.hist.n - 1 == p->max_at + p->nafter + 1) {
        p->near[p->nbefore + 1 + p->nafter++] = v;
    }
    if (sent)
        p->recent[(p->lat.hist.n - 1) % NEAR] = v;
}

static void periodic(per *p)
{
    blocker *b = p->b;
    rtb_time next = p->start, prev = 0;
    int64_t limit = p->ctx->opt->break_ns;
    int bi = 0;
    bool fresh = false; /* after a pause: no interval */
    while (p->slot < p->cycles && next <= p->stop_at &&
           !atomic_load_explicit(&p->ctx->stop, memory_order_relaxed)) {
        rtb_sleep_until(next);
        rtb_time w = rtb_clock_now();
        /* Another CPU broke meanwhile: its sample is the run's last. */
        if (limit && atomic_load_explicit(&p->ctx->stop, memory_order_relaxed))
            break;
        /* When the kernel could release it: `next` itself, or the tick at
         * or after it (the same when the period is a whole number of ticks). */
        rtb_time ref = rtb_on_grain(next, p->grain, p->phase);
        bool top = p->lat.hist.n == 0 || w - ref > p->lat.hist.max;
        push_ring(&p->lat, &p->head[0], w - ref);
        note_max(p, top, w - ref);
        p->t.early += w < next;
        if (p->released && !fresh) {
            push_ring(&p->iv, &p->head[1], w - prev);
            push_ring(&p->dev, &p->head[2], trunc_us(w - prev - p->period));
            count_interval(&p->t, w - prev - p->period);
        }
        live_add(&p->live, w - ref);
        for (; b && bi < b->n && b->at[bi] <= p->slot; bi++)
            if (b->at[bi] == p->slot) {
                b->release[bi] = p->released;
                b->latency[bi] = w - ref;
            }
        /* The first release of each CPU is a warm-up (a cold cache, a task
         * just created): never a break. */
        if (limit && p->released && w - ref > limit) {
            broke(p, ref, w);
            p->released++;
            p->slot++;
            break;
        }
        prev = w;
        p->released++;
        p->slot++;
        next += p->period;
        if (w >= next) {
            /* The first release is a warm-up (as for --break): its lateness
             * skips periods but is no deadline miss (rtbench.verdict). */
            if (p->released > 1)
                p->t.overrun++;
            for (; next <= w && p->slot < p->cycles; next += p->period, p->slot++)
                p->t.skipped++;
        }
        fresh = send_full(p, &next);
    }
}

static void per_main(void *arg)
{
    per *p = arg;
    rtb_sem_take(p->go, RTB_FOREVER);
    periodic(p);
    rtb_sem_give(p->done);
}

static void report_blocker(rtb_ctx *ctx, const per *p, bool ran, rtb_result *r)
{
    const blocker *b = p->b;
    if (!ctx->port->realtime) {
        rtb_emit_check_skip(ctx, "blocker", "the self-test needs real-time priority: the "
                            "blocker must preempt the periodic task");
        return;
    }
    if (!ran) {
        rtb_emit_check_error(ctx, "blocker", "the blocker did not run (too few periods)");
        return;
    }
    /* Each held-up release's own latency, not just the maximum: noise
     * elsewhere in the run must not pass for the blocker's effect. */
    char list[640];
    size_t len = 0, seen = 0, under = 0;
    list[0] = '\0';
    for (int i = 0; i < b->n; i++) {
        if (b->release[i] < 0)
            continue;
        seen++;
        under += b->latency[i] < b->hold;
        if (len < sizeof list - 48)
            len += (size_t)snprintf(list + len, sizeof list - len, "%srelease %lld: %.1f us",
                                    len ? ", " : "", (long long)b->release[i],
                                    (double)b->latency[i] / 1e3);
    }
    bool pass = seen > 0 && under == 0;
    rtb_emit_check(ctx, "blocker", pass, "%llu releases held up for %lld us, %llu of them "
                   "waited less; latency by release: %s", (unsigned long long)seen,
                   (long long)(b->hold / 1000), (unsigned long long)under, list);
    if (!pass)
        *r = RTB_FAILED;
}

/* "CPU 1: " before a per-CPU check or warning; nothing on one CPU. */
static const char *on_cpu(const per *p, bool multi, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (multi)
        snprintf(buf, cap, "CPU %d: ", p->cpu);
    return buf;
}

static void report(rtb_ctx *ctx, per *p, bool multi, bool broken, bool capped, rtb_result *r)
{
    const tally *t = &p->t;
    uint64_t n = p->iv.hist.n;
    char where[32];
    on_cpu(p, multi, where, sizeof where);
    /* The max in its neighbourhood: a soak run's ring may no longer hold it. */
    char near[400];
    size_t len = 0;
    near[0] = '\0';
    if (p->lat.hist.n) {
        len += (size_t)snprintf(near, sizeof near, "; max latency %.1f us at release %lld, "
                                "the releases around it (us):", (double)p->lat.hist.max / 1e3,
                                (long long)p->max_at);
        for (int i = 0; i <= p->nbefore + p->nafter && len < sizeof near; i++)
            len += (size_t)snprintf(near + len, sizeof near - len,
                                    i == p->nbefore ? " [%.1f]" : " %.1f",
                                    (double)p->near[i] / 1e3);
    }
    char paused[96] = "";
    if (t->pauses)
        snprintf(paused, sizeof paused, " (%llu of them paused %llu times to send samples)",
                 (unsigned long long)t->paused, (unsigned long long)t->pauses);
    rtb_emit_check(ctx, "releases", t->early == 0,
                   "%s%lld releases in %lld periods%s, %llu before their planned time; %llu "
                   "intervals vs %lld us: %llu shorter, %llu equal, %llu longer; |deviation| "
                   "0 us: %llu, 1-9 us: %llu, 10-99 us: %llu, >= 100 us: %llu; deviation min "
                   "%.1f us, max %.1f us%s",
                   where, (long long)p->released, (long long)p->slot, paused,
                   (unsigned long long)t->early,
                   (unsigned long long)n, (long long)(p->period / 1000),
                   (unsigned long long)t->shorter, (unsigned long long)t->equal,
                   (unsigned long long)t->longer, (unsigned long long)t->cat[0],
                   (unsigned long long)t->cat[1], (unsigned long long)t->cat[2],
                   (unsigned long long)t->cat[3],
                   n ? (double)(p->iv.hist.min - p->period) / 1e3 : 0.0,
                   n ? (double)(p->iv.hist.max - p->period) / 1e3 : 0.0, near);
    if (t->early)
        *r = RTB_FAILED;
    if (t->overrun)
        rtb_warn(ctx, "overrun", "%s%llu of %lld releases came after the next planned release; "
                 "%llu periods skipped; max latency %.1f us (period %lld us)", where,
                 (unsigned long long)t->overrun, (long long)p->released,
                 (unsigned long long)t->skipped, (double)p->lat.hist.max / 1e3,
                 (long long)(p->period / 1000));
    else if (t->skipped)
        rtb_warn(ctx, "warmup", "%sthe first release came after the next planned one (a "
                 "warm-up, not a deadline miss); %llu periods skipped", where,
                 (unsigned long long)t->skipped);
    /* A run that duration_ms ends (a soak run: --duration) ends as planned. */
    if (p->slot < p->cycles && !broken && !capped)
        rtb_warn(ctx, "truncated", "%s%lld of %lld periods: stopped before the hard deadline",
                 where, (long long)p->slot, (long long)p->cycles);
}

/* The planned periods, or the cap when it is shorter: the hard deadline
 * follows the run the user asked for, however long. */
static rtb_time expected(const rtb_ctx *ctx)
{
    int64_t period = rtb_param(ctx, "period_us") * 1000, cycles = rtb_param(ctx, "cycles");
    rtb_time planned = cycles > INT64_MAX / 4 / period ? INT64_MAX / 4 : cycles * period;
    rtb_time cap = rtb_param(ctx, "duration_ms") * 1000000;
    return cap && cap < planned ? cap : planned;
}

/* Per CPU: n, the latest, the largest and the sum of the latencies so far
 * (docs/wire-format.md, `progress`). Written by the monitor at priority 1,
 * below every periodic task. */
static void emit_progress(rtb_ctx *ctx, per *ps, int np)
{
    rtb_json *j = rtb_rec_begin(ctx->stream, "progress");
    rtb_json_str(j, "case", ctx->cur->id);
    rtb_json_str(j, "series", "latency");
    rtb_json_i64(j, "elapsed_ns", rtb_clock_now() - ctx->started);
    rtb_json_arr(j, "cpus");
    for (int i = 0; i < np; i++) {
        live l = live_read(&ps[i].live);
        rtb_json_obj(j, NULL);
        rtb_json_i64(j, "cpu", ps[i].cpu);
        rtb_json_i64(j, "n", l.n);
        if (l.n) {
            rtb_json_i64(j, "last", l.last);
            rtb_json_i64(j, "max", l.max);
        }
        rtb_json_i64(j, "sum", l.sum);
        rtb_json_obj_end(j);
    }
    rtb_json_arr_end(j);
    rtb_rec_end(ctx->stream);
}

static void emit_break(rtb_ctx *ctx, const brk *k, bool multi)
{
    rtb_json *j = rtb_rec_begin(ctx->stream, "break");
    rtb_json_str(j, "case", ctx->cur->id);
    rtb_json_str(j, "series", "latency");
    if (multi) {
        rtb_json_obj(j, "point");
        rtb_json_i64(j, "cpu", k->cpu);
        rtb_json_obj_end(j);
    }
    rtb_json_i64(j, "cpu", k->cpu);
    rtb_json_i64(j, "index", k->index);
    rtb_json_i64(j, "value", k->value);
    rtb_json_i64(j, "threshold", ctx->opt->break_ns);
    rtb_json_i64(j, "at_ns", k->at);
    rtb_rec_end(ctx->stream);
}

static int init_per(rtb_ctx *ctx, per *p, int cpu, size_t cap, bool multi)
{
    p->ctx = ctx;
    p->cpu = cpu;
    p->period = rtb_param(ctx, "period_us") * 1000;
    p->cycles = rtb_param(ctx, "cycles");
    int ok = rtb_series_init_streamed(&p->lat, ctx, "latency", cap) == RTB_OK;
    ok = (rtb_series_init_streamed(&p->iv, ctx, "interval", cap) == RTB_OK) & ok;
    ok = (rtb_series_init_streamed(&p->dev, ctx, "deviation", cap) == RTB_OK) & ok;
    /* An interval and a signed deviation from the release time are
     * lengths of time, not costs: only `latency` is one. */
    rtb_series_set_kind(&p->iv, RTB_KIND_DURATION);
    rtb_series_set_kind(&p->dev, RTB_KIND_DURATION);
    /* +-DEV_US in 1 us buckets, wider where a port keeps fewer buckets
     * (the layout in the record says which). */
    int width_us = (2 * DEV_US + 1 + RTB_HIST_MAX_BUCKETS - 1) / RTB_HIST_MAX_BUCKETS;
    rtb_hist_init_linear(&p->dev.hist, -DEV_US * 1000, width_us * 1000,
                         (2 * DEV_US + 1 + width_us - 1) / width_us);
    if (multi) {
        rtb_series_set_point(&p->lat, "cpu", cpu);
        rtb_series_set_point(&p->iv, "cpu", cpu);
        rtb_series_set_point(&p->dev, "cpu", cpu);
    }
    return ok ? RTB_OK : RTB_ENOMEM;
}

static void free_per(per *p)
{
    rtb_series_free(&p->dev);
    rtb_series_free(&p->iv);
    rtb_series_free(&p->lat);
}

/* One random slot in each of n equal stretches (fixed seed: the same slots
 * every run). */
static void plan_blocker(blocker *b, int64_t reach)
{
    uint64_t seed = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < b->n && reach > b->n; i++) {
        int64_t lo = 1 + i * (reach - 1) / b->n, hi = 1 + (i + 1) * (reach - 1) / b->n;
        b->at[i] = lo + (int64_t)(xorshift(&seed) % (uint64_t)(hi - lo));
        b->release[i] = -1;
    }
}

/* Waits for the periodic tasks, writing a progress record every
 * --progress ms meanwhile. */
static void monitor(rtb_ctx *ctx, rtb_sem *done, per *ps, int np)
{
    rtb_time every = ctx->opt->progress_ms * 1000000, next = ctx->started + every;
    if (every)
        rtb_thread_self_set(1, ctx->opt->cpu);
    for (int left = np; left > 0;) {
        int rc = rtb_sem_take(done, every ? next : RTB_FOREVER);
        if (rc == RTB_OK) {
            left--;
        } else if (rc == RTB_ETIMEDOUT) {
            emit_progress(ctx, ps, np);
            for (rtb_time now = rtb_clock_now(); next <= now;)
                next += every;
        } else {
            break; /* the join below still waits for them */
        }
    }
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
}

static rtb_result run(rtb_ctx *ctx)
{
    char why[256];
    if (rtb_load_check("kernel", (int)rtb_param(ctx, "load_threads"), why, sizeof why) ==
        RTB_ENOTSUP)
        return rtb_unsupported(ctx, "%s", why); /* before any buffer is held */
    bool multi = ctx->opt->ncpus > 0;
    int np = multi ? ctx->opt->ncpus : 1;
    per *ps = rtb_mem_calloc((size_t)np, sizeof *ps);
    size_t nb = rtb_param(ctx, "blocker_us") ? (size_t)rtb_param(ctx, "blocker_count") : 0;
    blocker *b = rtb_mem_calloc(1, sizeof *b + 3 * nb * sizeof(int64_t));
    if (b) {
        b->at = (int64_t *)(b + 1);
        b->release = b->at + nb;
        b->latency = b->release + nb;
    }
    brk *k = rtb_mem_calloc(1, sizeof *k);
    rtb_thread *th = rtb_mem_calloc((size_t)np + 1, sizeof *th);
    rtb_sem done, go;
    bool have_done = false;
    int nth = 0, started = 0;
    rtb_result r = RTB_PASSED;
    if (!ps || !b || !k || !th) {
        rtb_emit_check_error(ctx, "buffer", "no memory");
        r = RTB_ERROR;
        goto out;
    }
    int64_t cycles = rtb_param(ctx, "cycles");
    size_t cap = (size_t)cycles;
    if (cap > ctx->opt->max_samples)
        cap = ctx->opt->max_samples;
    for (int i = 0; i < np; i++)
        if (init_per(ctx, &ps[i], multi ? ctx->opt->cpus[i] : ctx->opt->cpu, cap, multi) !=
            RTB_OK) {
            rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples on %d CPUs",
                                 (unsigned long long)cap, np);
            r = RTB_ERROR;
            goto out;
        }
    if (rtb_sem_create(&done, 0) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no semaphore");
        r = RTB_ERROR;
        goto out;
    }
    if (rtb_sem_create(&go, 0) != RTB_OK) {
        rtb_sem_delete(&done);
        rtb_emit_check_error(ctx, "buffer", "no semaphore");
        r = RTB_ERROR;
        goto out;
    }
    have_done = true; /* both */
    rtb_time period = ps[0].period;
    b->period = period;
    b->hold = rtb_param(ctx, "blocker_us") * 1000;
    b->n = b->hold ? (int)rtb_param(ctx, "blocker_count") : 0;

    /* The cap, and a second before the hard deadline for the records. */
    rtb_time cap_ns = rtb_param(ctx, "duration_ms") * 1000000;
    rtb_time stop_at = cap_ns ? ctx->started + cap_ns : ctx->deadline;
    bool capped = cap_ns != 0;
    if (stop_at > ctx->deadline - 1000000000) {
        stop_at = ctx->deadline - 1000000000;
        capped = false;
    }
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    char err[256];
    /* Normal scheduling (priority 0): the task preempts the load and meets
     * only its kernel sections, as in the published method. A real-time
     * load keeping the CPU busy would spend the RT budget every second, and
     * RT throttling's stall would become the headline max. One load per
     * measured CPU. */
    for (int i = 0; i < np; i++) {
        int lrc = rtb_load_start(&ps[i].load, "kernel", (int)rtb_param(ctx, "load_threads"),
                                 ps[i].cpu, 0, err, sizeof err);
        if (lrc != RTB_OK) {
            if (lrc == RTB_ENOTSUP) {
                r = rtb_unsupported(ctx, "%s", err);
            } else {
                rtb_emit_check_error(ctx, "load", "%s", err);
                r = RTB_ERROR;
            }
            goto stop_loads;
        }
    }
    for (int i = 0; i < np; i++) {
        ps[i].brk = k;
        ps[i].done = &done;
        ps[i].go = &go;
        ps[i].stop_at = stop_at;
    }
    ps[0].b = b;
    for (int i = 0; i < np; i++) {
        rtb_thread_attr a = rtb_attr(ctx, "jit-per", 0);
        a.cpu = ps[i].cpu;
        if (rtb_thread_create(&th[i], &a, per_main, &ps[i]) != RTB_OK) {
            rtb_emit_check_error(ctx, "thread", "cannot start the periodic task on CPU %d",
                                 ps[i].cpu);
            r = RTB_ERROR;
            atomic_store(&ctx->stop, true);
            break;
        }
        started++;
    }
    /* The schedule starts once every task is in place (they wait on `go`):
     * creating threads on a busy machine must not make a first release
     * late before its task even exists. */
    rtb_time phase, grain = rtb_release_grain(&phase);
    rtb_time start = rtb_on_grain(rtb_clock_now() + (2 * period > 2000000 ? 2 * period : 2000000),
                                  grain, phase);
    b->start = start;
    b->grain = grain;
    b->phase = phase;
    b->stop_at = stop_at;
    int64_t reach = (stop_at - start) / period;
    if (reach > cycles)
        reach = cycles;
    plan_blocker(b, reach);
    for (int i = 0; i < np; i++) {
        ps[i].start = start;
        ps[i].grain = grain;
        ps[i].phase = phase;
    }
    if (b->n && reach > b->n && started == np) {
        rtb_thread_attr a = rtb_attr(ctx, "jit-blocker", 1);
        a.cpu = ps[0].cpu;
        nth = rtb_thread_create(&th[np], &a, blocker_main, b) == RTB_OK;
    }
    for (int i = 0; i < started; i++)
        rtb_sem_give(&go);
    monitor(ctx, &done, ps, started);
    atomic_store(&b->done, true);
    if (rtb_join_all(ctx, th, started) != RTB_OK)
        r = RTB_ERROR;
    if (nth && rtb_join_all(ctx, &th[np], 1) != RTB_OK)
        r = RTB_ERROR;
    bool broken = atomic_load(&k->taken) != 0;
    if (broken) {
        emit_break(ctx, k, multi);
        /* A break is a finding: a latency over what the user allowed. */
        char where[32] = "";
        if (multi)
            snprintf(where, sizeof where, "CPU %d: ", k->cpu);
        rtb_emit_check(ctx, "break", false, "%slatency %.1f us at release %lld, over the "
                       "--break threshold of %.1f us (the first release of each CPU is a "
                       "warm-up, not held against it)", where, (double)k->value / 1e3,
                       (long long)k->index, (double)ctx->opt->break_ns / 1e3);
        if (r == RTB_PASSED)
            r = RTB_FAILED;
    }
    for (int i = 0; i < np && r != RTB_ERROR; i++) {
        if (!ps[i].released && broken) {
            /* Stopped by another CPU's break before its first release: that
             * CPU measured nothing, which is no failure of rtbench. */
            rtb_warn(ctx, "no_release", "CPU %d: no release before the break on CPU %d",
                     ps[i].cpu, k->cpu);
        } else if (!ps[i].released) {
            rtb_emit_check_error(ctx, "releases", "%sno release before the hard deadline",
                                 multi ? "a CPU had " : "");
            r = RTB_ERROR;
        } else {
            report(ctx, &ps[i], multi, broken, capped, &r);
        }
    }
    if (b->hold)
        report_blocker(ctx, &ps[0], nth, &r);
stop_loads:
    for (int i = 0; i < np; i++) {
        rtb_load_stats ls;
        if (!ps[i].load)
            continue;
        if (rtb_load_stop(ps[i].load, ctx->deadline + 2000000000, &ls) != RTB_OK) {
            r = RTB_ERROR;
            continue;
        }
        if (r == RTB_UNSUPPORTED)
            continue;
        char where[32];
        on_cpu(&ps[i], multi, where, sizeof where);
        /* Jitter "under load" means nothing if the load never got the CPU. */
        bool ran = ls.ops_total > 0;
        if (ran && ls.ops_min == 0) /* less load than asked, still under load */
            rtb_warn(ctx, "load_idle", "%sa kernel-load thread completed no %s", where,
                     ls.unit);
        rtb_emit_check(ctx, "load_ran", ran,
                       "%s%d kernel-load threads at normal priority: %llu %s, the least busy "
                       "%llu", where, ls.threads, (unsigned long long)ls.ops_total, ls.unit,
                       (unsigned long long)ls.ops_min);
        if (!ran && r == RTB_PASSED)
            r = RTB_FAILED;
    }
    if (started)
        for (int i = 0; i < np; i++) {
            unroll(&ps[i].lat, ps[i].head[0]);
            unroll(&ps[i].iv, ps[i].head[1]);
            unroll(&ps[i].dev, ps[i].head[2]);
            /* The latency's reference: the port's release grain, 0 when
             * it was the planned time itself. */
            rtb_tags grain_tag = {.attr_key = "release_grain_ns", .attr_value = ps[i].grain};
            rtb_emit_series_tagged(ctx, &ps[i].lat, &grain_tag);
            rtb_emit_series(ctx, &ps[i].iv);
            rtb_emit_series(ctx, &ps[i].dev);
        }
out:
    if (have_done) {
        rtb_sem_delete(&go);
        rtb_sem_delete(&done);
    }
    /* In reverse order of allocation: an arena takes back its top. */
    for (int i = np - 1; ps && i >= 0; i--)
        free_per(&ps[i]);
    rtb_mem_free(th);
    rtb_mem_free(k);
    rtb_mem_free(b);
    rtb_mem_free(ps);
    return r;
}

const rtb_case rtb_case_jit_per = {
    .id = "JIT-PER",
    .title = "Periodic task release jitter",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .expected_ns = expected,
    .per_cpu = true,
    .jitter = true,
};
