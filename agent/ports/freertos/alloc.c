/* SPDX-License-Identifier: Apache-2.0 */
/* FreeRTOS's allocators as this port builds the kernel: every object is
 * static (configSUPPORT_DYNAMIC_ALLOCATION 0), so no heap_N.c is linked and
 * pvPortMalloc does not exist; FreeRTOS has no fixed-block pool. */
#include "rtb/alloc.h"

int rtb_heap_alloc(size_t size, void **out) { (void)size, (void)out; return RTB_ENOTSUP; }
int rtb_heap_free(void *p) { (void)p; return RTB_ENOTSUP; }

const char *rtb_heap_why(void)
{
    return "this FreeRTOS build allocates nothing at run time (configSUPPORT_DYNAMIC_ALLOCATION "
           "0: static objects only, no heap_N.c, no pvPortMalloc)";
}

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
    return "FreeRTOS has no fixed-block memory pool (only the heap_N.c allocators)";
}
