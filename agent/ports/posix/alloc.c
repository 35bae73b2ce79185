/* SPDX-License-Identifier: Apache-2.0 */
/* The POSIX port's allocators: the C library's heap, which is what a Linux
 * program allocates from. POSIX has no fixed-block pool: MEM-POOL is
 * unsupported here rather than timing a pool rtbench would have to write. */
#include <stdlib.h>

#include "rtb/alloc.h"

int rtb_heap_alloc(size_t size, void **out)
{
    *out = malloc(size);
    return *out ? RTB_OK : RTB_ENOMEM;
}

int rtb_heap_free(void *p)
{
    free(p);
    return RTB_OK;
}

const char *rtb_heap_why(void) { return NULL; }

int rtb_pool_create(rtb_pool *pool, void *storage, size_t block, unsigned count)
{
    (void)pool, (void)storage, (void)block, (void)count;
    return RTB_ENOTSUP;
}
int rtb_pool_get(rtb_pool *pool, void **out) { (void)pool, (void)out; return RTB_ENOTSUP; }
int rtb_pool_put(rtb_pool *pool, void *p) { (void)pool, (void)p; return RTB_ENOTSUP; }
int rtb_pool_delete(rtb_pool *pool) { (void)pool; return RTB_ENOTSUP; }

const char *rtb_pool_why(void)
{
    return "POSIX has no fixed-block allocator (a pool would be rtbench's code, not the OS's)";
}
