/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small helpers used everywhere: cleanup attributes, ownership transfer,
 * array sizes. Modelled on systemd's macro.h and alloc-util.h.
 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* func##p(), a cleanup for a pointer to type that calls func(p) unless p is
 * NULL: DEFINE_POINTER_CLEANUP(xmlDoc, xmlFreeDoc) gives xmlFreeDocp(). */
#define DEFINE_POINTER_CLEANUP(type, func)              \
        static inline void func##p(type **p) {          \
                if (*p)                                 \
                        func(*p);                       \
        }

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand out ownership: returns the pointer and leaves NULL behind. */
#define steal_pointer(pp)                       \
        __extension__({                                      \
                typeof(*(pp)) _p_ = *(pp);      \
                *(pp) = NULL;                   \
                _p_;                            \
        })

/* Same for a file descriptor: returns it and leaves -1 behind. */
#define steal_fd(fdp)                           \
        __extension__({                                      \
                int _fd_ = *(fdp);              \
                *(fdp) = -1;                    \
                _fd_;                           \
        })

static inline const char *strna(const char *s) {
        return s ? s : "n/a";
}

static inline const char *strempty(const char *s) {
        return s ? s : "";
}

static inline int streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

#define streq(a, b) (strcmp((a), (b)) == 0)
