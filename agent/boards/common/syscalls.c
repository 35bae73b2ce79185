/* SPDX-License-Identifier: Apache-2.0 */
/* What newlib and the compiler's runtime need of a bare-metal program:
 * console output, a heap (stdio, the series' sample buffers), locks for
 * malloc under the scheduler (the port's rtb_os_lock), and the 64-bit atomics Cortex-M3 lacks
 * (it has no LDREXD; gcc calls __atomic_*_8 and there is no libatomic). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "firmware.h"

int _write(int fd, const char *buf, int len);
int _write(int fd, const char *buf, int len)
{
    (void)fd; /* stdout and stderr share the console */
    board_write(buf, (size_t)len);
    return len;
}

extern char __HeapBase, __HeapLimit;
static char *heap_top = &__HeapBase;

void *_sbrk(ptrdiff_t incr);
void *_sbrk(ptrdiff_t incr)
{
    if (incr < 0 || incr > &__HeapLimit - heap_top) {
        errno = ENOMEM;
        return (void *)-1;
    }
    char *old = heap_top;
    heap_top += incr;
    return old;
}

/* The heap's high-water mark (bench: RAM used). */
size_t firmware_heap_used(void) { return (size_t)(heap_top - &__HeapBase); }

struct _reent;
void __malloc_lock(struct _reent *r);
void __malloc_unlock(struct _reent *r);
void __malloc_lock(struct _reent *r)
{
    (void)r;
    rtb_os_lock();
}
void __malloc_unlock(struct _reent *r)
{
    (void)r;
    rtb_os_unlock();
}

/* ---- 64-bit atomics: interrupts masked around the access ---------------- */

static uint32_t mask(void)
{
    uint32_t primask;
    __asm__ volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
    return primask;
}

static void unmask(uint32_t primask) { __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory"); }

uint64_t __atomic_load_8(const volatile void *p, int order);
uint64_t __atomic_load_8(const volatile void *p, int order)
{
    (void)order;
    uint32_t m = mask();
    uint64_t v = *(const volatile uint64_t *)p;
    unmask(m);
    return v;
}

void __atomic_store_8(volatile void *p, uint64_t v, int order);
void __atomic_store_8(volatile void *p, uint64_t v, int order)
{
    (void)order;
    uint32_t m = mask();
    *(volatile uint64_t *)p = v;
    unmask(m);
}

uint64_t __atomic_exchange_8(volatile void *p, uint64_t v, int order);
uint64_t __atomic_exchange_8(volatile void *p, uint64_t v, int order)
{
    (void)order;
    uint32_t m = mask();
    uint64_t old = *(volatile uint64_t *)p;
    *(volatile uint64_t *)p = v;
    unmask(m);
    return old;
}

bool __atomic_compare_exchange_8(volatile void *p, void *expected, uint64_t desired, bool weak,
                                 int success, int failure);
bool __atomic_compare_exchange_8(volatile void *p, void *expected, uint64_t desired, bool weak,
                                 int success, int failure)
{
    (void)weak;
    (void)success;
    (void)failure;
    uint32_t m = mask();
    uint64_t cur = *(volatile uint64_t *)p;
    bool ok = cur == *(uint64_t *)expected;
    if (ok)
        *(volatile uint64_t *)p = desired;
    else
        *(uint64_t *)expected = cur;
    unmask(m);
    return ok;
}

#define FETCH_OP(name, op)                                                                  \
    uint64_t __atomic_fetch_##name##_8(volatile void *p, uint64_t v, int order);          \
    uint64_t __atomic_fetch_##name##_8(volatile void *p, uint64_t v, int order)           \
    {                                                                                     \
        (void)order;                                                                      \
        uint32_t m = mask();                                                              \
        uint64_t old = *(volatile uint64_t *)p;                                           \
        *(volatile uint64_t *)p = old op v;                                               \
        unmask(m);                                                                        \
        return old;                                                                       \
    }
FETCH_OP(add, +)
FETCH_OP(sub, -)
FETCH_OP(and, &)
FETCH_OP(or, |)
FETCH_OP(xor, ^)

/* The fault layer's clock skew asks which CPU reads: there is one. */
int sched_getcpu(void) { return 0; }

/* The rest of newlib's system interface: one console, no files. */
void _exit(int status);
void _exit(int status) { board_exit(status); }

int _kill(int pid, int sig);
int _kill(int pid, int sig)
{
    (void)pid;
    (void)sig;
    errno = EINVAL;
    return -1;
}

int _getpid(void);
int _getpid(void) { return 1; }

int _close(int fd);
int _close(int fd)
{
    (void)fd;
    return -1;
}

int _lseek(int fd, int off, int whence);
int _lseek(int fd, int off, int whence)
{
    (void)fd;
    (void)off;
    (void)whence;
    return 0;
}

int _read(int fd, char *buf, int len);
int _read(int fd, char *buf, int len)
{
    (void)fd;
    (void)buf;
    (void)len;
    return 0; /* no console input: end of file */
}

int _fstat(int fd, struct stat *st);
int _fstat(int fd, struct stat *st)
{
    (void)fd;
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFCHR;
    return 0;
}

int _isatty(int fd);
int _isatty(int fd)
{
    (void)fd;
    return 1;
}
