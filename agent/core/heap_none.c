/* SPDX-License-Identifier: Apache-2.0 */
/* The heap of a port that has none (no ports/NAME/heap.c): RTB_ENOTSUP,
 * with the port's reason (RTB_NO_HEAP_WHY in its rtb_port_config.h). */
#include "rtb/alloc.h"

#ifndef RTB_NO_HEAP_WHY
#define RTB_NO_HEAP_WHY "this port declares no heap (rtb/alloc.h)"
#endif

int rtb_heap_alloc(size_t size, void **out) { (void)size, (void)out; return RTB_ENOTSUP; }
int rtb_heap_free(void *p) { (void)p; return RTB_ENOTSUP; }
const char *rtb_heap_why(void) { return RTB_NO_HEAP_WHY; }
