/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The port's configuration: what the core and the cases size by the port.
 * Each port writes agent/ports/NAME/rtb_port_config.h (on the include path
 * of its build); this header checks it and gives the defaults. The storage
 * sizes are required: only the port knows its OS objects.
 */
#ifndef RTB_CONFIG_H
#define RTB_CONFIG_H

#include "rtb_port_config.h"

#if !defined(RTB_THREAD_STORAGE) || !defined(RTB_SEM_STORAGE) || \
    !defined(RTB_MUTEX_STORAGE) || !defined(RTB_QUEUE_STORAGE) || !defined(RTB_EVENT_STORAGE)
#error "rtb_port_config.h must define RTB_{THREAD,SEM,MUTEX,QUEUE,EVENT}_STORAGE"
#endif

/* Alignment of the opaque storage (the strictest the OS objects need). */
#ifndef RTB_STORAGE_ALIGN
#define RTB_STORAGE_ALIGN 8
#endif

/* Stack of a thread whose attribute says 0 (case threads, the watchdog). */
#ifndef RTB_THREAD_STACK
#define RTB_THREAD_STACK 4096
#endif

/* Stack a case asks for a thread that only stamps, counts and calls the
 * port's primitives (no record, no printing): THR-SW's workers, SEM-ARC's
 * waiters, THR-CTX's threads. 64 KiB, as those cases asked before, where a
 * stack is virtual memory; a board's port sets the measured need with a
 * margin (issue 22: a case's threads in 64 KiB of RAM). */
#ifndef RTB_WORKER_STACK
#define RTB_WORKER_STACK (64 * 1024)
#endif

/* Case threads a run may hold at once (a sweep point that needs more is
 * skipped with the reason, rtb_threads_fit); 0: as many as the OS gives. */
#ifndef RTB_CASE_THREADS
#define RTB_CASE_THREADS 0
#endif
/* What limits them, in the port's words: the detail of a skipped point
 * (the core knows no board; %d: RTB_CASE_THREADS). */
#ifndef RTB_CASE_THREADS_WHY
#define RTB_CASE_THREADS_WHY "this port holds %d case threads at once"
#endif

/* CPUs the agent can address (placement lists, per-CPU tables). */
#ifndef RTB_MAX_CPUS
#define RTB_MAX_CPUS 1
#endif

/* Samples each series buffers by default, and the most an option may ask
 * (the memory budget of raw samples; histograms are always kept). */
#ifndef RTB_MAX_SAMPLES_DEFAULT
#define RTB_MAX_SAMPLES_DEFAULT 1000
#endif
#ifndef RTB_MAX_SAMPLES_LIMIT
#define RTB_MAX_SAMPLES_LIMIT 100000
#endif

/* Samples a streamed series holds in RAM (rtb_series_init_streamed) before
 * they go out as a record; 0: all of them (sent when the case ends). */
#ifndef RTB_SERIES_BUFFER
#define RTB_SERIES_BUFFER 0
#endif

/* Rounds a case stamps into its own arrays (two threads' stamps, an
 * interrupt's) before it turns them into samples, between measured windows:
 * a board's RAM holds one block of stamps, not the run's. A case runs its
 * rounds in blocks of rtb_stamp_block(rounds); 0: all rounds in one block. */
#ifndef RTB_STAMP_BLOCK
#define RTB_STAMP_BLOCK 0
#endif

/* Buckets of a histogram (16 KiB of counters at 2048; each series has one). */
#ifndef RTB_HIST_BUCKETS
#define RTB_HIST_BUCKETS 2048
#endif

/* The fewest sub-buckets an octave (2^s) a log2 histogram keeps when
 * RTB_HIST_BUCKETS cannot reach every 64-bit value: rather than lose
 * resolution, the values above its top bucket count as overflow (exact in
 * n, min, max and sum; the `hist` record says its `buckets`). 1: the whole
 * 64-bit range at any bucket count. */
#ifndef RTB_HIST_LOG2_MIN_SUB_BITS
#define RTB_HIST_LOG2_MIN_SUB_BITS 1
#endif

/* RTB_HIST_COUNT32, when defined: a histogram's counters are 32 bits, half
 * the RAM (a small board's: 4 KiB a series at 1024 buckets). A bucket
 * stops at 2^32 - 1 (over an hour of one-microsecond samples in one
 * bucket) and the record's n, exact beside it, then says more than the
 * counts do. Undefined: 64 bits. */

/* CLK-DUR's automatic threshold, in clock reads: a gap is time taken from
 * a spinning loop longer than this many reads. 20 keeps a noisy OS's
 * jitter out; a port whose loop runs without noise (an RTOS on one core,
 * an emulator counting instructions) sees a short tick with fewer. */
#ifndef RTB_GAP_THRESHOLD_READS
#define RTB_GAP_THRESHOLD_READS 20
#endif

/* RTB_CASE_ARENA (bytes), when defined: sample buffers and histograms come
 * from a static arena of that size, emptied before every case, instead of
 * malloc (core/mem.c). Undefined: the heap. */

/* The largest stack frame the build accepts (-Wframe-larger-than). */
#ifndef RTB_FRAME_LIMIT
#define RTB_FRAME_LIMIT 2048
#endif

/* The OS's boot command line in the hello record (x86 COMMAND_LINE_SIZE);
 * an RTOS has none and keeps the RAM. */
#ifndef RTB_OS_CMDLINE_CAP
#define RTB_OS_CMDLINE_CAP 2048
#endif

/* Cases one run can plan. */
#ifndef RTB_MAX_RUN
#define RTB_MAX_RUN 64
#endif

/* The longest record body; a histogram record of many buckets needs most. */
#ifndef RTB_STREAM_BODY_CAP
#define RTB_STREAM_BODY_CAP 16384
#endif

/* 1: the port has background loads (its port.cmake sets RTB_PORT_HAS_LOADS
 * ON and the build defines this); 0: rtb_load_* answer RTB_ENOTSUP and a
 * case that needs a load is unsupported. */
#ifndef RTB_PORT_HAS_LOADS
#define RTB_PORT_HAS_LOADS 0
#endif

#endif
