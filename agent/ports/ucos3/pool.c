/* SPDX-License-Identifier: Apache-2.0 */
/* uC/OS-III's memory partitions (OSMemCreate/Get/Put): the fixed-block
 * pool MEM-POOL times. (No heap: RTB_NO_HEAP_WHY in rtb_port_config.h.) */
#include <string.h>

#include "os.h"
#include "rtb/alloc.h"

_Static_assert(sizeof(OS_MEM) <= RTB_POOL_STORAGE, "rtb_pool too small for OS_MEM");

int rtb_pool_create(rtb_pool *pool, void *storage, size_t block, unsigned count)
{
    OS_ERR err;
    memset(pool, 0, sizeof *pool);
    /* A partition's blocks hold the free list's link: at least a pointer,
     * and aligned like one. */
    if (block < sizeof(void *) || block % sizeof(void *) || count < 2)
        return RTB_EINVAL;
    OSMemCreate((OS_MEM *)pool, (CPU_CHAR *)"rtb-pool", storage, (OS_MEM_QTY)count,
                (OS_MEM_SIZE)block, &err);
    return err == OS_ERR_NONE ? RTB_OK : RTB_EFAIL;
}

int rtb_pool_get(rtb_pool *pool, void **out)
{
    OS_ERR err;
    *out = OSMemGet((OS_MEM *)pool, &err);
    if (err == OS_ERR_MEM_NO_FREE_BLKS)
        return RTB_EAGAIN;
    return err == OS_ERR_NONE ? RTB_OK : RTB_EFAIL;
}

int rtb_pool_put(rtb_pool *pool, void *p)
{
    OS_ERR err;
    OSMemPut((OS_MEM *)pool, p, &err);
    return err == OS_ERR_NONE ? RTB_OK : RTB_EFAIL;
}

/* uC/OS-III cannot delete a partition: it is forgotten with its storage. */
int rtb_pool_delete(rtb_pool *pool)
{
    (void)pool;
    return RTB_OK;
}

const char *rtb_pool_why(void) { return NULL; }
