/* SPDX-License-Identifier: Apache-2.0 */
/* The record stream of docs/wire-format.md: "@rtb <ver> <seq> <kind> <json>
 * <crc32>" lines, each flushed when written so a crash loses nothing that
 * was already measured. */
#include <string.h>

#include "rtb.h"

uint32_t rtb_crc32(const void *data, size_t len) { return rtb_crc32_update(0, data, len); }

uint32_t rtb_crc32_update(uint32_t crc, const void *data, size_t len)
{
    /* Table built on first use: no heap, and 1 KiB of .bss is fine. */
    static uint32_t table[256];
    static atomic_bool ready;
    if (!atomic_load_explicit(&ready, memory_order_acquire)) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        atomic_store_explicit(&ready, true, memory_order_release);
    }
    crc ^= 0xFFFFFFFFu;
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
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

void rtb_rec_end(rtb_stream *s)
{
    rtb_json_obj_end(&s->json);
    /* The line is written in three pieces, its CRC taken over the first two
     * as one: no copy of the body (RAM a small board lacks). A record the
     * watchdog writes in between damages this line, which the host then
     * drops by its CRC, never misreads. */
    char head[64], seq[24];
    rtb_fmt_u64(seq, s->seq);
    int n = snprintf(head, sizeof head, "%d %s %s ", RTB_STREAM_FORMAT, seq, s->kind);
    uint32_t crc = rtb_crc32_update(rtb_crc32_update(0, head, (size_t)n), s->json.buf,
                                    s->json.len);
    fprintf(s->out, "@rtb %s", head);
    fwrite(s->json.buf, 1, s->json.len, s->out);
    fprintf(s->out, " %08lx\n", (unsigned long)crc);
    fflush(s->out);
    s->seq++;
    if (!s->urgent)
        rtb_mutex_unlock(&s->lock);
}
