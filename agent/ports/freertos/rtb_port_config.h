/* SPDX-License-Identifier: Apache-2.0 */
/* The FreeRTOS port's configuration (rtb/config.h lists the macros). The
 * FreeRTOS objects live in the port's static pools (port.c), so an rtbench
 * object holds a pointer and a handle; a semaphore holds its
 * StaticSemaphore_t (80 bytes on Cortex-M3) itself. */
#ifndef RTB_PORT_CONFIG_H
#define RTB_PORT_CONFIG_H

#define RTB_THREAD_STORAGE 16
#define RTB_SEM_STORAGE 96
#define RTB_MUTEX_STORAGE 16
#define RTB_QUEUE_STORAGE 32
#define RTB_EVENT_STORAGE 48
#define RTB_STORAGE_ALIGN 8

/* Sized from the high-water marks bench/bench_rtos.py prints: case threads
 * use 1,156 bytes at most (TM-BASIC, NOISE-OS, CLK-DUR: under 260 for the
 * rest), a third more is the margin; boards/common/stacks.c ends the run
 * when a thread comes within 16 bytes of its stack's end. */
#define RTB_THREAD_STACK 1536
/* Worker threads (rtb/config.h) use 232 bytes at most (THR-SW on
 * FreeRTOS: the stamps, a yield, the exception frame an interrupt pushes);
 * twice that is the margin, and boards/common/stacks.c ends the run when a
 * thread comes within 16 bytes of its stack's end. */
#define RTB_WORKER_STACK 512
/* 64 KiB of RAM hold 16 worker threads beside the agent's own (37 KiB of
 * static data, the agent's task and the watchdog) and a case's series. */
#define RTB_CASE_THREADS 16
#define RTB_CASE_THREADS_WHY "this board holds %d beside the agent's in its 64 KiB of RAM"
#define RTB_MAX_CPUS 1
#define RTB_MAX_SAMPLES_DEFAULT 2000
#define RTB_MAX_SAMPLES_LIMIT 200000
/* A streamed series holds 128 samples (1 KiB; a record takes 256 at an
 * 8 KiB body) and sends them between measured windows as they fill. */
#define RTB_SERIES_BUFFER 128
/* Stamp arrays hold as many rounds as a streamed series buffers. */
#define RTB_STAMP_BLOCK 128
#define RTB_MAX_RUN 64
/* No boot command line to report (an empty string): 2 KiB of RAM kept. */
#define RTB_OS_CMDLINE_CAP 8
/* RAM (issue 10: a small case under 64 KiB): a record body of 8 KiB holds
 * a histogram's non-empty buckets and a samples chunk (core/run.c sizes it
 * from the body); the buckets below keep a log2 histogram at 16 sub-buckets an
 * octave (6 %). */
#define RTB_STREAM_BODY_CAP 8192
/* 528 buckets at 16 sub-buckets an octave (6 %, as at 1024) reach 2^36 ns
 * (68 s); a value above it is overflow, exact in n/min/max/sum (issue 22:
 * 2.1 KiB of counters a series, not 4). Figures from kept samples do not
 * depend on it; one from the histogram keeps its resolution below 68 s. */
#define RTB_HIST_BUCKETS 528
#define RTB_HIST_LOG2_MIN_SUB_BITS 4
/* 32-bit counters: half the RAM of 64-bit ones (a small board, issue 22). */
#define RTB_HIST_COUNT32
/* The spinning loop runs alone on the core: the 1 kHz tick (3.6 us under
 * -icount shift=5) is 6-7 reads long, under the default's 20. */
#define RTB_GAP_THRESHOLD_READS 4

/* rtb/alloc.h: this build's kernel has neither. */
#define RTB_NO_HEAP_WHY                                                                          \
    "this FreeRTOS build allocates nothing at run time (configSUPPORT_DYNAMIC_ALLOCATION 0: "   \
    "static objects only, no heap_N.c, no pvPortMalloc)"
#define RTB_NO_POOL_WHY "FreeRTOS has no fixed-block memory pool (only the heap_N.c allocators)"

#endif
