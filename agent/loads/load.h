/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The POSIX port's loads (rtb/load.h is what the runner and the cases see).
 *
 * Kinds:
 *   cpu     busy loops (a duty cycle when at a real-time priority)
 *   memory  cache and memory thrashing over a buffer larger than the LLC
 *   kernel  system-call storms that take kernel locks or run with
 *           preemption disabled: file create/write/unlink, mmap/munmap,
 *           vfork/exit, getpid/sched_yield, hackbench-style pipe messages
 *   io      write + fsync to an unnamed file (O_TMPFILE) in $TMPDIR or /tmp
 *   irq     high-rate POSIX timers whose signals hit the load threads
 *   stress  stress-ng as a child process (when installed)
 *   mixed   = cpu, memory, kernel, io, irq;   none = nothing
 *
 * Spec syntax: KIND[:name=value...][,KIND...]; "stress:ARGS" (or
 * "stress-ng:ARGS") takes the rest of the text as stress-ng's options.
 */
#ifndef RTB_POSIX_LOAD_H
#define RTB_POSIX_LOAD_H

#include <stdio.h>

#include "rtb/load.h"

/* Parses `text` into specs[0..*n); "none" gives *n = 0. On failure writes
 * a message naming the kinds or parameters to `err` and returns
 * RTB_EINVAL. Checks that stress-ng exists and accepts its options. */
int rtb_load_parse(const char *text, rtb_load_spec *specs, int cap, int *n, char *err,
                   size_t errcap);
/* The kinds and their parameters, for --help. */
void rtb_load_help(FILE *f);
/* The stress load's guardian process (the agent re-executed with
 * --load-guard; posix_stress.c): argv after that option. */
int rtb_load_guard(int argc, char **argv);

#endif
