/* SPDX-License-Identifier: Apache-2.0 */
/* The allocators of a port that declares none (no ports/NAME/alloc.c). */
#include "rtb/alloc.h"

int rtb_heap_alloc(size_t size, void **out) { (void)size, (void)out; return RTB_ENOTSUP; }
int rtb_heap_free(void *p) { (void)p; return RTB_ENOTSUP; }
const char *rtb_heap_why(void) { return "this port declares no heap (rtb/alloc.h)"; }

int rtb_pool_create(rtb_pool *pool, void *storage, size_t block, unsigned count)
{
    (void)pool, (void)storage, (void)block, (void)count;
    return RTB_ENOTSUP;
}
int rtb_pool_get(rtb_pool *pool, void **out) { (void)pool, (void)out; return RTB_ENOTSUP; }
int rtb_pool_put(rtb_pool *pool, void *p) { (void)pool, (void)p; return RTB_ENOTSUP; }
int rtb_pool_delete(rtb_pool *pool) { (void)pool; return RTB_ENOTSUP; }
const char *rtb_pool_why(void) { return "this port declares no fixed-block pool (rtb/alloc.h)"; }
