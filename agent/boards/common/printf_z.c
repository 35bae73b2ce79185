/* SPDX-License-Identifier: Apache-2.0 */
/* Debian's newlib is built without C99's `z` length modifier: "%zu" prints
 * "zu" and takes no argument, which shifts every later argument of the
 * same call (a figure then reads as garbage). size_t is unsigned int on
 * ARM EABI, so dropping the `z` is exact. The linker wraps newlib's
 * formatting workers (-Wl,--wrap=...), so every printf-family call is
 * covered. Portable code prints a size_t as %llu with a cast; this stays
 * while a case still has %zu (cases/thr_sw.c). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(size_t) == sizeof(unsigned), "%zu -> %u needs a 32-bit size_t");

struct _reent;

/* `fmt` without `z` modifiers, in `buf`; `fmt` itself if it has none or
 * does not fit. */
static const char *strip_z(const char *fmt, char *buf, size_t cap)
{
    if (!strchr(fmt, 'z') || strlen(fmt) >= cap)
        return fmt;
    size_t n = 0;
    bool conv = false;
    for (const char *p = fmt; *p; p++) {
        if (conv && *p == 'z')
            continue;
        if (*p == '%')
            conv = !conv; /* "%%" is a literal percent sign */
        else if (conv && strchr("diouxXcspfFeEgGaAn", *p))
            conv = false;
        buf[n++] = *p;
    }
    buf[n] = '\0';
    return buf;
}

#define WRAP(fn)                                                                            \
    int __real_##fn(struct _reent *r, FILE *f, const char *fmt, va_list ap);               \
    int __wrap_##fn(struct _reent *r, FILE *f, const char *fmt, va_list ap);               \
    int __wrap_##fn(struct _reent *r, FILE *f, const char *fmt, va_list ap)                \
    {                                                                                      \
        char buf[384];                                                                     \
        return __real_##fn(r, f, strip_z(fmt, buf, sizeof buf), ap);                       \
    }

WRAP(_vfprintf_r)
WRAP(_svfprintf_r)
WRAP(_vfiprintf_r)
WRAP(_svfiprintf_r)
