/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Optional: the OS's memory allocators, for MEM-HEAP and MEM-POOL (Zephyr's
 * latency_measure and Thread-Metric time both). The general heap (POSIX
 * malloc, FreeRTOS pvPortMalloc) and a fixed-block pool (uC/OS memory
 * partitions, Zephyr's k_mem_slab), in the port's heap.c and pool.c. A
 * port without one gets core/heap_none.c or pool_none.c: RTB_ENOTSUP with
 * the reason its rtb_port_config.h gives (RTB_NO_HEAP_WHY, RTB_NO_POOL_WHY),
 * and the case is then unsupported there. Same rules as port.h.
 */
#ifndef RTB_ALLOC_H
#define RTB_ALLOC_H

#include <stddef.h>

#include "rtb/port.h"

#ifndef RTB_POOL_STORAGE
#define RTB_POOL_STORAGE 64
#endif
typedef struct { _Alignas(16) unsigned char opaque[RTB_POOL_STORAGE]; } rtb_pool;

/* `*out` = `size` bytes from the OS's heap; RTB_ENOMEM when it has none
 * left, RTB_ENOTSUP (with `rtb_heap_why`) when the port has no heap. */
int rtb_heap_alloc(size_t size, void **out);
int rtb_heap_free(void *p);
/* Why there is no heap, or NULL. */
const char *rtb_heap_why(void);

/* A pool of `count` blocks of `block` bytes in `storage` (block * count
 * bytes the caller owns until rtb_pool_delete). */
int rtb_pool_create(rtb_pool *pool, void *storage, size_t block, unsigned count);
/* RTB_EAGAIN when every block is taken: never blocks. */
int rtb_pool_get(rtb_pool *pool, void **out);
int rtb_pool_put(rtb_pool *pool, void *p);
int rtb_pool_delete(rtb_pool *pool);
/* Why there is no pool, or NULL. */
const char *rtb_pool_why(void);

#endif
