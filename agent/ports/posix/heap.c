/* SPDX-License-Identifier: Apache-2.0 */
/* The POSIX port's heap: the C library's, which is what a Linux program
 * allocates from. (No pool: RTB_NO_POOL_WHY in rtb_port_config.h.) */
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
