/* SPDX-License-Identifier: Apache-2.0 */
/* The RTOS ports' pools whose slots each own a piece of one arena (a
 * thread's stack, a queue's storage): the piece is carved on the slot's
 * first use and stays with it, so a freed slot serves the next request its
 * piece fits and the arena never fragments. One picker for every port and
 * pool, written once as a macro over the port's own slot type (a function
 * would need the kernel's types). The caller holds the kernel's lock. */
#ifndef RTB_FIRMWARE_SLOTS_H
#define RTB_FIRMWARE_SLOTS_H

#include <stdbool.h>
#include <stddef.h>

/* Defines `static SLOT *FN(size_t need)`: marks and returns a free slot of
 * SLOTS[0..N) (fields `used`, MEM its piece, SIZE the piece's length in
 * ARENA elements) whose piece holds `need` elements; else the first free
 * slot without a piece, given `need` rounded up to a multiple of ROUND
 * elements from ARENA (USED of them taken). need 0 (the caller brings its
 * own memory): the first free slot. NULL: none free, or the arena spent. */
#define FIRMWARE_SLOT_PICKER(FN, SLOT, SLOTS, N, MEM, SIZE, ARENA, USED, ROUND)               \
    static SLOT *FN(size_t need)                                                              \
    {                                                                                         \
        SLOT *fresh = NULL;                                                                   \
        for (int i = 0; i < (N); i++) {                                                       \
            SLOT *s = &(SLOTS)[i];                                                            \
            if (s->used)                                                                      \
                continue;                                                                     \
            if ((s->MEM && s->SIZE >= need) || (need == 0 && !fresh && !s->MEM)) {            \
                s->used = true;                                                               \
                return s;                                                                     \
            }                                                                                 \
            if (!s->MEM && !fresh)                                                            \
                fresh = s;                                                                    \
        }                                                                                     \
        need = (need + (ROUND) - 1) / (ROUND) * (ROUND);                                      \
        if (!fresh || need > sizeof(ARENA) / sizeof((ARENA)[0]) - (USED))                     \
            return NULL;                                                                      \
        fresh->MEM = &(ARENA)[USED];                                                          \
        fresh->SIZE = need;                                                                   \
        (USED) += need;                                                                       \
        fresh->used = true;                                                                   \
        return fresh;                                                                         \
    }

#endif
