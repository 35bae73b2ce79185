/* SPDX-License-Identifier: Apache-2.0 */
/* The one JSON writer: every record body goes through it, so every string
 * is escaped and every key is well formed. It never allocates; what does not
 * fit is clipped and flagged, and the output stays valid JSON. */
#include <math.h>
#include <string.h>

#include "rtb.h"

/* Room kept for closing brackets so a clipped body still parses. */
#define RESERVE (RTB_JSON_DEPTH + 4)
/* A member starts only with room for its key and a short value. */
#define MEMBER_MIN 24

void rtb_json_init(rtb_json *j, char *buf, size_t cap)
{
    j->buf = buf;
    j->cap = cap;
    j->len = 0;
    j->overflow = false;
    j->depth = 0;
    j->skipped = 0;
    j->first[0] = true;
    buf[0] = '\0';
}

static bool room(rtb_json *j, size_t n)
{
    if (j->len + n + RESERVE >= j->cap) {
        j->overflow = true;
        return false;
    }
    return true;
}

static void put(rtb_json *j, const char *s, size_t n)
{
    if (!room(j, n))
        return;
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void putc_(rtb_json *j, char c) { put(j, &c, 1); }

static void escaped(rtb_json *j, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    putc_(j, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[7];
        size_t n = 0;
        switch (*p) {
        case '"': memcpy(esc, "\\\"", 2); n = 2; break;
        case '\\': memcpy(esc, "\\\\", 2); n = 2; break;
        case '\n': memcpy(esc, "\\n", 2); n = 2; break;
        case '\r': memcpy(esc, "\\r", 2); n = 2; break;
        case '\t': memcpy(esc, "\\t", 2); n = 2; break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[*p >> 4];
                esc[5] = hex[*p & 15];
                n = 6;
            } else {
                esc[0] = (char)*p;
                n = 1;
            }
        }
        /* Clip at a character boundary so the string stays valid UTF-8. */
        if (!room(j, n + 1)) {
            while (j->len > 0 && ((unsigned char)j->buf[j->len - 1] & 0xC0) == 0x80)
                j->len--;
            if (j->len > 0 && ((unsigned char)j->buf[j->len - 1] & 0xC0) == 0xC0)
                j->len--;
            break;
        }
        put(j, esc, n);
    }
    /* The closing quote uses the reserve, so it always fits. */
    j->buf[j->len++] = '"';
    j->buf[j->len] = '\0';
}

/* Writes the separator and key; false (and nothing written) when the member
 * does not fit, so a clipped body is still valid JSON, just shorter. */
static bool member(rtb_json *j, const char *key)
{
    size_t need = (key ? strlen(key) * 6 + 3 : 0) + MEMBER_MIN;
    if (j->skipped || !room(j, need)) {
        j->overflow = true;
        return false;
    }
    if (!j->first[j->depth])
        putc_(j, ',');
    j->first[j->depth] = false;
    if (key) {
        escaped(j, key);
        putc_(j, ':');
    }
    return true;
}

static void open_(rtb_json *j, const char *key, char c)
{
    if (j->depth + 1 >= RTB_JSON_DEPTH || !member(j, key)) {
        j->overflow = true;
        j->skipped++; /* its close must not close the parent */
        return;
    }
    putc_(j, c);
    j->depth++;
    j->first[j->depth] = true;
}

static void close_(rtb_json *j, char c)
{
    if (j->skipped) {
        j->skipped--;
        return;
    }
    if (j->depth > 0)
        j->depth--;
    j->buf[j->len++] = c; /* from the reserve: brackets always close */
    j->buf[j->len] = '\0';
}

void rtb_json_obj(rtb_json *j, const char *key) { open_(j, key, '{'); }
void rtb_json_obj_end(rtb_json *j) { close_(j, '}'); }
void rtb_json_arr(rtb_json *j, const char *key) { open_(j, key, '['); }
void rtb_json_arr_end(rtb_json *j) { close_(j, ']'); }

void rtb_json_str(rtb_json *j, const char *key, const char *value)
{
    if (member(j, key))
        escaped(j, value ? value : "");
}

const char *rtb_json_vstrf(rtb_json *j, const char *key, const char *fmt, va_list ap)
{
    /* Formatted into the top RTB_JSON_TEXT_CAP bytes of the body, then
     * escaped into the body below them: no 1 KiB buffer on the caller's
     * stack (a board's main stack is sized to its deepest path, a check's
     * detail). The body is taken as that much shorter meanwhile, so the
     * escaped text never reaches what it is read from. */
    char *text = j->buf + j->cap - RTB_JSON_TEXT_CAP;
    vsnprintf(text, RTB_JSON_TEXT_CAP, fmt, ap);
    size_t cap = j->cap;
    j->cap -= RTB_JSON_TEXT_CAP;
    rtb_json_str(j, key, text);
    j->cap = cap;
    return text;
}

void rtb_json_strf(rtb_json *j, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rtb_json_vstrf(j, key, fmt, ap);
    va_end(ap);
}

/* By hand: newlib has no PRId64 without sys/types.h, and a nano printf
 * none at all. */
size_t rtb_fmt_u64(char *out, uint64_t v)
{
    char rev[24];
    size_t n = 0;
    do {
        rev[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = rev[n - 1 - i];
    out[n] = '\0';
    return n;
}

size_t rtb_fmt_i64(char *out, int64_t v)
{
    if (v >= 0)
        return rtb_fmt_u64(out, (uint64_t)v);
    out[0] = '-';
    return 1 + rtb_fmt_u64(out + 1, -(uint64_t)v); /* INT64_MIN too */
}

void rtb_json_i64(rtb_json *j, const char *key, int64_t value)
{
    char tmp[24];
    size_t n = rtb_fmt_i64(tmp, value);
    if (member(j, key))
        put(j, tmp, n);
}

void rtb_json_u64(rtb_json *j, const char *key, uint64_t value)
{
    char tmp[24];
    size_t n = rtb_fmt_u64(tmp, value);
    if (member(j, key))
        put(j, tmp, n);
}

void rtb_json_f64(rtb_json *j, const char *key, double value)
{
    char tmp[32];
    if (!member(j, key))
        return;
    if (!isfinite(value)) { /* JSON has no NaN or infinity */
        put(j, "null", 4);
        return;
    }
    int n = snprintf(tmp, sizeof tmp, "%.17g", value);
    put(j, tmp, (size_t)n);
}

void rtb_json_bool(rtb_json *j, const char *key, bool value)
{
    if (member(j, key))
        put(j, value ? "true" : "false", value ? 4 : 5);
}

bool rtb_json_str_open(rtb_json *j, const char *key)
{
    if (!member(j, key))
        return false;
    putc_(j, '"');
    return true;
}

void rtb_json_str_put(rtb_json *j, const char *text, size_t len) { put(j, text, len); }

void rtb_json_str_close(rtb_json *j)
{
    /* RESERVE keeps room for the quote even when the text was clipped. */
    j->buf[j->len++] = '"';
    j->buf[j->len] = '\0';
}

void rtb_json_raw_str(rtb_json *j, const char *key, const char *text, size_t len)
{
    if (!rtb_json_str_open(j, key))
        return;
    rtb_json_str_put(j, text, len);
    rtb_json_str_close(j);
}

void rtb_json_num(rtb_json *j, const char *key, const char *digits)
{
    if (member(j, key))
        put(j, digits, strlen(digits));
}
