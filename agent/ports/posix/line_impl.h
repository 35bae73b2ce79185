/* SPDX-License-Identifier: Apache-2.0 */
/* What the POSIX port's line.c and stim.c share: the line object behind
 * rtb_line, and the helpers that turn errno into a status and a reason. */
#ifndef RTB_POSIX_LINE_IMPL_H
#define RTB_POSIX_LINE_IMPL_H

#include <stdatomic.h>
#include <stddef.h>

#include "rtb/line.h"

typedef struct {
    int kind;
    int in_fd, out_fd;        /* the agent's ends (GPIO: line request fds) */
    int edge_fd, answer_fd;   /* the stimulator's ends (software lines) */
    atomic_int level;         /* the input's last known level */
    char chip[48];            /* GPIO: the chip's path */
    unsigned drive, sense;    /* GPIO: the stimulator's offsets */
    unsigned in_off, out_off; /* GPIO: the agent's offsets */
} posix_line;

_Static_assert(sizeof(posix_line) <= RTB_LINE_STORAGE, "rtb_line too small");

/* errno -> RTB_E* */
int posix_line_status(int e);
/* Writes the message and ": the OS's reason" (errno) into why; returns rc. */
int posix_line_say(char *why, size_t cap, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Closes *fd if open and marks it closed. */
void posix_line_close_fd(int *fd);

#endif
