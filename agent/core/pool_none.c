/* SPDX-License-Identifier: Apache-2.0 */
/* The fixed-block pool of a port that has none (no ports/NAME/pool.c):
 * RTB_ENOTSUP, with the port's reason (RTB_NO_POOL_WHY). */
#include "rtb/alloc.h"

#ifndef RTB_NO_POOL_WHY
#define RTB_NO_POOL_WHY "this port declares no fixed-block pool (rtb/alloc.h)"
#endif

int rtb_pool_create(rtb_pool *pool, void *storage, size_t block, unsigned count)
{
    (void)pool, (void)storage, (void)block, (void)count;
    return RTB_ENOTSUP;
}
int rtb_pool_get(rtb_pool *pool, void **out) { (void)pool, (void)out; return RTB_ENOTSUP; }
int rtb_pool_put(rtb_pool *pool, void *p) { (void)pool, (void)p; return RTB_ENOTSUP; }
int rtb_pool_delete(rtb_pool *pool) { (void)pool; return RTB_ENOTSUP; }
const char *rtb_pool_why(void) { return RTB_NO_POOL_WHY; }
