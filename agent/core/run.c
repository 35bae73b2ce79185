/* SPDX-License-Identifier: Apache-2.0 */
/* What every case shares: the monitor that ends it, thread attributes,
 * and the records it writes after its measured section. */
#include <stdarg.h>
#include <string.h>

#include "rtb.h"

rtb_thread_attr rtb_attr(const rtb_ctx *ctx, const char *name, int prio_offset)
{
    int prio = ctx->opt->priority + prio_offset;
    if (prio > RTB_PRIO_MAX - 2) /* the top two belong to monitor and watchdog */
        prio = RTB_PRIO_MAX - 2;
    if (prio < 1)
        prio = 1;
    return (rtb_thread_attr){.name = name, .priority = prio, .cpu = ctx->opt->cpu};
}

void rtb_monitor(rtb_ctx *ctx, rtb_time duration_ns)
{
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_sleep_until(rtb_clock_now() + duration_ns);
    atomic_store(&ctx->stop, true);
}

int rtb_join_all(rtb_ctx *ctx, rtb_thread *threads, int n)
{
    int rc = RTB_OK;
    for (int i = 0; i < n; i++) {
        /* Past the deadline the watchdog ends the run; waiting a little
         * longer keeps the two from writing at once. */
        int r = rtb_thread_join(&threads[i], ctx->deadline + 2000000000);
        /* Never back into the case with one of its threads alive: it would
         * write into what the case frees and crash the agent later. A stall
         * of the whole process (a paused VM, reclaim) can end this wait
         * before the watchdog has run; the watchdog is armed until the case
         * returns, so a thread that never stops still ends the run there. */
        if (r == RTB_ETIMEDOUT)
            r = rtb_thread_join(&threads[i], RTB_FOREVER);
        if (r != RTB_OK)
            rc = r;
    }
    return rc;
}

static void case_keys(rtb_json *j, const rtb_ctx *ctx)
{
    rtb_json_str(j, "case", ctx->cur->id);
}

static void series_keys(rtb_json *j, const rtb_ctx *ctx, const rtb_series *s,
                        const rtb_tags *tags)
{
    case_keys(j, ctx);
    rtb_json_str(j, "series", s->name);
    if (s->point_key || (tags && tags->key[0])) {
        rtb_json_obj(j, "point");
        if (s->point_key)
            rtb_json_i64(j, s->point_key, s->point_value);
        for (int i = 0; tags && i < 2 && tags->key[i]; i++)
            rtb_json_str(j, tags->key[i], tags->value[i]);
        rtb_json_obj_end(j);
    }
    rtb_json_str(j, "unit", rtb_kind_unit(s->kind));
    rtb_json_str(j, "kind", rtb_kind_name(s->kind));
    if (tags && tags->attr_key) {
        rtb_json_obj(j, "attrs");
        rtb_json_i64(j, tags->attr_key, tags->attr_value);
        rtb_json_obj_end(j);
    }
}

static void exact_keys(rtb_json *j, const rtb_hist *h)
{
    rtb_json_u64(j, "n", h->n);
    if (h->n) {
        rtb_json_i64(j, "min", h->min);
        rtb_json_i64(j, "max", h->max);
    }
    /* The sum may not fit 64 bits; JSON integers have no limit. */
    bool neg = h->sum.hi < 0;
    uint64_t hi = (uint64_t)h->sum.hi, lo = h->sum.lo;
    if (neg) { /* two's complement negation of the pair */
        hi = ~hi + (lo == 0);
        lo = -lo;
    }
    /* Decimal digits by long division of four 32-bit limbs: no 128-bit type. */
    uint32_t limb[4] = {(uint32_t)(hi >> 32), (uint32_t)hi, (uint32_t)(lo >> 32), (uint32_t)lo};
    char digits[48], *p = digits + sizeof digits - 1;
    *p = '\0';
    bool more;
    do {
        uint64_t rem = 0;
        more = false;
        for (int i = 0; i < 4; i++) {
            uint64_t cur = (rem << 32) | limb[i];
            limb[i] = (uint32_t)(cur / 10);
            rem = cur % 10;
            more |= limb[i] != 0;
        }
        *--p = (char)('0' + (int)rem);
    } while (more);
    if (neg)
        *--p = '-';
    rtb_json_num(j, "sum", p);
}

/* Zig-zag LEB128 deltas in base64: docs/wire-format.md, "samples". */
/* Samples a record: at most 10 bytes each, 4/3 of that in base64, so a
 * chunk takes under half the record body (256 at a board's 8 KiB body,
 * 16384 at POSIX's 512 KiB). The host's work is per record as much as per
 * sample: 512 a record spent most of the time on each record's CRC, JSON
 * and schema; 16384 parse in about half the time 4096 took (issue 22). */
#define CHUNK (RTB_BODY_CAP / 32 < 16384 ? RTB_BODY_CAP / 32 : 16384)

/* Base64 written as the bytes come, into the record body through a small
 * buffer: no whole-chunk copies of the varints and of their base64 (6 KiB
 * of a board's RAM at 256 samples a chunk). */
typedef struct b64_writer {
    rtb_json *j;
    uint32_t acc; /* up to three bytes not yet written */
    int nacc;
    size_t o;
    char out[64];
} b64_writer;

static const char b64_table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_flush(b64_writer *w)
{
    rtb_json_str_put(w->j, w->out, w->o);
    w->o = 0;
}

static void b64_byte(b64_writer *w, unsigned char b)
{
    w->acc = w->acc << 8 | b;
    if (++w->nacc < 3)
        return;
    if (w->o + 4 > sizeof w->out)
        b64_flush(w);
    w->out[w->o++] = b64_table[(w->acc >> 18) & 63];
    w->out[w->o++] = b64_table[(w->acc >> 12) & 63];
    w->out[w->o++] = b64_table[(w->acc >> 6) & 63];
    w->out[w->o++] = b64_table[w->acc & 63];
    w->acc = 0;
    w->nacc = 0;
}

static void b64_end(b64_writer *w)
{
    if (w->nacc) { /* one or two bytes left: padded as the decoder expects */
        int n = w->nacc;
        uint32_t x = w->acc << (8 * (3 - n));
        if (w->o + 4 > sizeof w->out)
            b64_flush(w);
        w->out[w->o++] = b64_table[x >> 18];
        w->out[w->o++] = b64_table[(x >> 12) & 63];
        w->out[w->o++] = n == 2 ? b64_table[(x >> 6) & 63] : '=';
        w->out[w->o++] = '=';
    }
    b64_flush(w);
}

static void encode_chunk(const int64_t *v, size_t n, b64_writer *w)
{
    int64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t d = (uint64_t)v[i] - (uint64_t)prev; /* wraps like the decoder */
        prev = v[i];
        uint64_t z = (d << 1) ^ (uint64_t)((int64_t)d >> 63);
        do {
            unsigned char b = z & 0x7F;
            z >>= 7;
            b64_byte(w, (unsigned char)(b | (z ? 0x80 : 0)));
        } while (z);
    }
    b64_end(w);
}

static void emit_hist(rtb_ctx *ctx, const rtb_series *s, const rtb_tags *tags)
{
    const rtb_hist *h = &s->hist;
    rtb_json *j = rtb_rec_begin(ctx->stream, "hist");
    series_keys(j, ctx, s, tags);
    rtb_json_obj(j, "layout");
    if (h->kind == RTB_HIST_LOG2) {
        rtb_json_str(j, "kind", "log2");
        rtb_json_i64(j, "sub_bits", h->sub_bits);
        /* Below what a 64-bit value reaches: the top ones are overflow. */
        if (h->nbuckets < ((63 - h->sub_bits) << h->sub_bits) + (2 << h->sub_bits))
            rtb_json_i64(j, "buckets", h->nbuckets);
    } else {
        rtb_json_str(j, "kind", "linear");
        rtb_json_i64(j, "lo", h->lo);
        rtb_json_i64(j, "width", h->width);
        rtb_json_i64(j, "buckets", h->nbuckets);
    }
    rtb_json_obj_end(j);
    exact_keys(j, h);
    rtb_json_u64(j, "underflow", h->underflow);
    rtb_json_u64(j, "overflow", h->overflow);
    rtb_json_arr(j, "counts");
    for (int i = 0; i < h->nbuckets; i++) {
        if (!h->counts[i])
            continue;
        rtb_json_arr(j, NULL);
        rtb_json_i64(j, NULL, i);
        rtb_json_u64(j, NULL, h->counts[i]);
        rtb_json_arr_end(j);
    }
    rtb_json_arr_end(j);
    rtb_rec_end(ctx->stream);
}

/* The samples in v, each chunk at its index in the whole series (a
 * streamed series sent `sent` of them before). */
static void emit_samples(rtb_ctx *ctx, const rtb_series *s, const rtb_tags *tags)
{
    if (!ctx->opt->samples)
        return;
    for (size_t off = 0; off < s->n; off += CHUNK) {
        size_t n = s->n - off < CHUNK ? s->n - off : CHUNK;
        rtb_json *j = rtb_rec_begin(ctx->stream, "samples");
        series_keys(j, ctx, s, tags);
        rtb_json_str(j, "enc", "zzd-varint-b64");
        rtb_json_u64(j, "offset", s->sent + off);
        rtb_json_u64(j, "count", n);
        if (rtb_json_str_open(j, "data")) {
            b64_writer w = {.j = j};
            encode_chunk(s->v + off, n, &w);
            rtb_json_str_close(j);
        }
        rtb_rec_end(ctx->stream);
    }
}

void rtb_emit_series(rtb_ctx *ctx, const rtb_series *s) { rtb_emit_series_tagged(ctx, s, NULL); }

void rtb_emit_series_tagged(rtb_ctx *ctx, const rtb_series *s, const rtb_tags *tags)
{
    rtb_json *j = rtb_rec_begin(ctx->stream, "summary");
    series_keys(j, ctx, s, tags);
    exact_keys(j, &s->hist);
    rtb_json_u64(j, "dropped", s->dropped);
    rtb_rec_end(ctx->stream);
    emit_hist(ctx, s, tags);
    emit_samples(ctx, s, tags);
}

void rtb_series_flush(rtb_series *s)
{
    if (!s->stream_ctx)
        return;
    emit_samples(s->stream_ctx, s, NULL);
    s->sent += s->n;
    s->n = 0;
    size_t left = s->limit - (size_t)s->sent;
    s->cap = left < s->buffered ? left : s->buffered;
}

static void vcheck(rtb_ctx *ctx, const char *name, const char *verdict, const char *fmt, va_list ap)
{
    /* The detail is formatted into the record's body (rtb_json_vstrf), not
     * a 1 KiB buffer here: this is the deepest path of a board's main
     * stack (a case's frame, then a check, then printf). */
    rtb_json *j = rtb_rec_begin(ctx->stream, "check");
    case_keys(j, ctx);
    rtb_json_str(j, "name", name);
    rtb_json_str(j, "verdict", verdict);
    const char *detail = rtb_json_vstrf(j, "detail", fmt, ap);
    if (strcmp(verdict, "skip") != 0) {
        ctx->checks_applied++;
    } else if (!ctx->checks_skipped++) {
        /* Clipped on purpose: the check itself carries the whole detail. */
        size_t n = strnlen(detail, sizeof ctx->skip_reason - 1);
        memcpy(ctx->skip_reason, detail, n);
        ctx->skip_reason[n] = '\0';
    }
    rtb_rec_end(ctx->stream);
}

void rtb_emit_check(rtb_ctx *ctx, const char *name, bool pass, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vcheck(ctx, name, pass ? "pass" : "fail", fmt, ap);
    va_end(ap);
}

void rtb_emit_check_error(rtb_ctx *ctx, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vcheck(ctx, name, "error", fmt, ap);
    va_end(ap);
}

void rtb_emit_check_skip(rtb_ctx *ctx, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vcheck(ctx, name, "skip", fmt, ap);
    va_end(ap);
}

bool rtb_checks_need_realtime(rtb_ctx *ctx, const char *const *names, int n, const char *why)
{
    if (ctx->port->realtime)
        return true;
    for (int i = 0; i < n; i++)
        rtb_emit_check_skip(ctx, names[i], "needs real-time priority (%s): %s",
                            ctx->port->rt_detail, why);
    return false;
}

bool rtb_threads_fit(rtb_ctx *ctx, const char *point, int64_t n)
{
    if (RTB_CASE_THREADS == 0 || n <= RTB_CASE_THREADS)
        return true;
    rtb_emit_check_skip(ctx, "threads",
                        "%s: needs %lld threads at once; " RTB_CASE_THREADS_WHY
                        " (RTB_CASE_THREADS): the point is not run",
                        point, (long long)n, RTB_CASE_THREADS);
    return false;
}

void rtb_warn(rtb_ctx *ctx, const char *code, const char *fmt, ...)
{
    rtb_json *j = rtb_rec_begin(ctx->stream, "warn");
    rtb_json_str(j, "code", code);
    if (ctx->cur)
        case_keys(j, ctx);
    va_list ap;
    va_start(ap, fmt);
    rtb_json_vstrf(j, "detail", fmt, ap); /* no 1 KiB buffer on the stack */
    va_end(ap);
    rtb_rec_end(ctx->stream);
}

rtb_result rtb_unsupported(rtb_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->skip_reason, sizeof ctx->skip_reason, fmt, ap);
    va_end(ap);
    return RTB_UNSUPPORTED;
}
