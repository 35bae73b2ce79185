/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Optional port objects for RSP-IO (docs/cases.md, "RSP-IO"): an input line
 * with an edge event, an output line, and the stimulator outside the
 * measured code that drives the input and watches the output.
 *
 * A port without them implements every function as RTB_ENOTSUP (the case
 * is then skipped with the reason). The POSIX port's implementation is in
 * ports/posix/line.c: software lines (eventfd, pipe, pseudo-terminal) and
 * real GPIO through the kernel's GPIO character device (uAPI v2).
 *
 * Same rules as port.h: real functions, an int status, objects by value,
 * nothing allocated in rtb_line_get/wait/set (the measured path).
 */
#ifndef RTB_LINE_H
#define RTB_LINE_H

#include <stddef.h>

#include "rtb/port.h"

#ifndef RTB_LINE_STORAGE
#define RTB_LINE_STORAGE 128
#endif
#ifndef RTB_STIM_STORAGE
#define RTB_STIM_STORAGE 768
#endif

/* The agent's side of one line pair: the input (with its level and its edge
 * event) and the output. The far ends belong to the stimulator. */
typedef struct { _Alignas(16) unsigned char opaque[RTB_LINE_STORAGE]; } rtb_line;
/* The stimulator: a process (POSIX) or an instrument outside the target. */
typedef struct { _Alignas(16) unsigned char opaque[RTB_STIM_STORAGE]; } rtb_stim;

/* The kinds of line; each run records which one it used. */
typedef enum {
    RTB_LINE_EVENTFD = 0, /* Linux eventfd: the value carries the level */
    RTB_LINE_PIPE = 1,    /* a pipe each way: one byte per edge, '0' or '1' */
    RTB_LINE_PTY = 2,     /* a pseudo-terminal in raw mode (a serial line) */
    RTB_LINE_GPIO = 3,    /* two GPIO lines of a chip, wired out of band */
    RTB_LINE_TIMER = 4,   /* a bare-metal board: a hardware timer's emulated edges in,
                           * a board register out (boards/common/line.c) */
    RTB_LINE_KINDS
} rtb_line_kind;

/* The line RSP-IO uses when the run names none: a pipe on POSIX, the board's
 * own where a board supplies one (its build defines RTB_LINE_DEFAULT). */
#ifndef RTB_LINE_DEFAULT
#define RTB_LINE_DEFAULT RTB_LINE_PIPE
#endif

/* The name recorded in the run: "eventfd", "pipe", "pty", "gpio", "timer". */
const char *rtb_line_kind_name(int kind);

/* Opens the agent's side. `where` is only read for RTB_LINE_GPIO:
 * "CHIP:IN:OUT:DRIVE:SENSE" (e.g. "/dev/gpiochip0:3:4:5:6": the agent's
 * input 3 and output 4; the stimulator drives 5, wired to 3, and senses 6,
 * wired to 4; DRIVE = IN and SENSE = OUT: a gpio-sim chip, whose lines have
 * no wires, driven through the input's simulated pull). Both levels start
 * at 0. RTB_ENOTSUP: this kind does not exist here;
 * `why` (may be NULL) says why in words. */
int rtb_line_open(rtb_line *l, int kind, const char *where, char *why, size_t whycap);
int rtb_line_close(rtb_line *l);
/* The input's level now, without blocking (a polling loop's read). */
int rtb_line_get(rtb_line *l, int *level);
/* Blocks until an edge on the input or `deadline` (RTB_ETIMEDOUT); `level`
 * is the level after the edge. The nearest user-space equivalent of an
 * interrupt handler on the input. */
int rtb_line_wait(rtb_line *l, rtb_time deadline, int *level);
/* Drives the output to `level` (0 or 1). */
int rtb_line_set(rtb_line *l, int level);

/* Starts the stimulator on the far ends of `l`, pinned to `cpu` at the top
 * real-time priority it can get; cpu -1 (one CPU, shared with the measured
 * code): unpinned, and it waits for answers blocked instead of spinning. `extra` (may be NULL) is passed
 * on as further arguments (test builds: a clock skew). */
int rtb_stim_start(rtb_stim *s, rtb_line *l, int cpu, const char *extra, char *why,
                   size_t whycap);
/* One command line to the stimulator (outside measured sections). */
int rtb_stim_send(rtb_stim *s, const char *line);
/* One reply line (without its newline) by `deadline`; RTB_ETIMEDOUT, or
 * RTB_EFAIL when the stimulator is gone. */
int rtb_stim_recv(rtb_stim *s, char *buf, size_t cap, rtb_time deadline);
/* Ends the stimulator (asks, then kills at `deadline`) and reaps it;
 * RTB_OK when it exited by itself with status 0. */
int rtb_stim_stop(rtb_stim *s, rtb_time deadline);

#endif
