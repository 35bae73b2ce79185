/* SPDX-License-Identifier: Apache-2.0 */
/* The record stream of docs/wire-format.md: "@rtb <ver> <seq> <kind> <json>
 * <crc32>" lines, each flushed when written so a crash loses nothing that
 * was already measured. */
#include <string.h>

#include "rtb.h"

uint32_t rtb_crc32(const void *data, size_t len) { return rtb_crc32_update(0, data, len); }

/* The table of the reflected CRC-32 (0xEDB88320), built by the compiler:
 * constant data (a board's flash, not its RAM; 1 KiB of .bss before). */
#define CRC_1(c) (((c) >> 1) ^ (0xEDB88320u & (0u - ((c) & 1u))))
#define CRC_8(c) CRC_1(CRC_1(CRC_1(CRC_1(CRC_1(CRC_1(CRC_1(CRC_1((uint32_t)(c)))))))))
#define CRC_4(i) CRC_8(i), CRC_8((i) + 1), CRC_8((i) + 2), CRC_8((i) + 3)
#define CRC_16(i) CRC_4(i), CRC_4((i) + 4), CRC_4((i) + 8), CRC_4((i) + 12)
#define CRC_64(i) CRC_16(i), CRC_16((i) + 16), CRC_16((i) + 32), CRC_16((i) + 48)
static const uint32_t crc_table[256] = {CRC_64(0), CRC_64(64), CRC_64(128), CRC_64(192)};

uint32_t rtb_crc32_update(uint32_t crc, const void *data, size_t len)
{
    crc ^= 0xFFFFFFFFu;
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        crc = crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

void rtb_stream_init(rtb_stream *s, FILE *out)
{
    memset(s, 0, sizeof *s);
    s->out = out;
    rtb_mutex_create(&s->lock, 0);
}

static rtb_json *start(rtb_stream *s, const char *kind, char *body, size_t cap)
{
    s->kind = kind;
    rtb_json_init(&s->json, body, cap);
    rtb_json_obj(&s->json, NULL);
    return &s->json;
}

rtb_json *rtb_rec_begin(rtb_stream *s, const char *kind)
{
    rtb_mutex_lock(&s->lock);
    s->urgent = false;
    return start(s, kind, s->body, sizeof s->body);
}

rtb_json *rtb_rec_begin_urgent(rtb_stream *s, const char *kind)
{
    /* No lock: the stuck case may hold it forever. If it was mid-record,
     * the host sees a damaged or duplicate line, never a wrong figure. */
    s->urgent = true;
    return start(s, kind, s->urgent_body, sizeof s->urgent_body);
}

/* Appends the text at `src` (at most `max` bytes) to dst at `at`. */
static size_t put(char *dst, size_t at, const char *src, size_t max)
{
    size_t n = strnlen(src, max);
    memcpy(dst + at, src, n);
    return at + n;
}

void rtb_rec_end(rtb_stream *s)
{
    rtb_json_obj_end(&s->json);
    /* The line is written in three pieces, its CRC taken over the first two
     * as one: no copy of the body (RAM a small board lacks). A record the
     * watchdog writes in between damages this line, which the host then
     * drops by its CRC, never misreads. Built by hand, not by printf: the
     * watchdog writes on a board thread's small stack, and newlib's vfprintf
     * alone ran past it (a HardFault lockup instead of its records). */
    char head[80], num[24];
    size_t n = put(head, 0, "@rtb ", 8);
    rtb_fmt_u64(num, RTB_STREAM_FORMAT);
    n = put(head, n, num, sizeof num);
    head[n++] = ' ';
    rtb_fmt_u64(num, s->seq);
    n = put(head, n, num, sizeof num);
    head[n++] = ' ';
    n = put(head, n, s->kind, 24);
    head[n++] = ' ';
    /* The CRC covers the line from its version on (not the "@rtb " tag). */
    uint32_t crc = rtb_crc32_update(rtb_crc32_update(0, head + 5, n - 5), s->json.buf,
                                    s->json.len);
    char tail[10];
    tail[0] = ' ';
    for (int i = 0; i < 8; i++)
        tail[1 + i] = "0123456789abcdef"[(crc >> (28 - 4 * i)) & 0xF];
    tail[9] = '\n';
    fwrite(head, 1, n, s->out);
    fwrite(s->json.buf, 1, s->json.len, s->out);
    fwrite(tail, 1, sizeof tail, s->out);
    fflush(s->out);
    s->seq++;
    if (!s->urgent)
        rtb_mutex_unlock(&s->lock);
}
