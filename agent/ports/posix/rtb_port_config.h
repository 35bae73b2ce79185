/* SPDX-License-Identifier: Apache-2.0 */
/* The POSIX port's configuration (rtb/config.h lists the macros). */
#ifndef RTB_PORT_CONFIG_H
#define RTB_PORT_CONFIG_H

/* glibc x86_64 / aarch64 (armhf): sem_t 32 (16), pthread_mutex_t 40 (24),
 * mqd_t 4, timer_t 8: what port.c keeps in each, asserted there. */
#define RTB_THREAD_STORAGE 64
#define RTB_SEM_STORAGE 32
#define RTB_MUTEX_STORAGE 64
#define RTB_QUEUE_STORAGE 64
#define RTB_EVENT_STORAGE 96
#define RTB_STORAGE_ALIGN 16

#define RTB_THREAD_STACK (128 * 1024)
#define RTB_MAX_CPUS 1024
#define RTB_MAX_SAMPLES_DEFAULT 1000000
#define RTB_MAX_SAMPLES_LIMIT 100000000
#define RTB_MAX_RUN 64
#define RTB_STREAM_BODY_CAP 524288

/* rtb/alloc.h: the C library's heap (heap.c); no pool of the OS's own. */
#define RTB_NO_POOL_WHY "POSIX has no fixed-block allocator (a pool would be rtbench's code, not the OS's)"

#endif
