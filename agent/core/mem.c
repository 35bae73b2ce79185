/* SPDX-License-Identifier: Apache-2.0 */
/* Case memory (rtb.h, "case memory"): the heap, or a static arena on a port
 * without one (RTB_CASE_ARENA). The arena is a bump allocator: a free of
 * the newest block takes it back, any other waits for the next reset. */
#include <stdlib.h>
#include <string.h>

#include "rtb.h"

void *rtb_mem_calloc(size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size)
        return NULL;
    void *p = rtb_mem_alloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

#ifdef RTB_CASE_ARENA

#define ALIGN 8u

/* Before each block: where the arena's top was, so that frees in reverse
 * order of allocation (a sweep's series, point after point) take it back. */
typedef struct block {
    size_t prev_top, end;
} block;

static _Alignas(ALIGN) unsigned char arena[RTB_CASE_ARENA];
static size_t top, peak;

void *rtb_mem_alloc(size_t size)
{
    size_t at = (top + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    size_t need = sizeof(block) + ((size + ALIGN - 1) & ~(size_t)(ALIGN - 1));
    if (size > sizeof arena || at > sizeof arena - need)
        return NULL;
    block *b = (block *)(void *)(arena + at);
    b->prev_top = top;
    b->end = at + need;
    top = b->end;
    if (top > peak)
        peak = top;
    return b + 1;
}

void rtb_mem_free(void *p)
{
    if (!p)
        return;
    block *b = (block *)p - 1;
    if (b->end == top)
        top = b->prev_top;
}

void rtb_mem_reset(void) { top = peak = 0; }

size_t rtb_mem_peak(void) { return peak; }

#else

void *rtb_mem_alloc(size_t size) { return malloc(size); }

void rtb_mem_free(void *p) { free(p); }

void rtb_mem_reset(void) {}

size_t rtb_mem_peak(void) { return 0; }

#endif
