/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The unit tests' one assertion: check(expr) stops the test at the first
 * failure, naming the file, the line and the expression.
 */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define check(expr)                                                             \
        do {                                                                    \
                if (!(expr)) {                                                  \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
                                __LINE__, #expr);                               \
                        abort();                                                \
                }                                                               \
        } while (0)

/* check() for two strings, printing both when they differ. */
#define check_streq(a, b)                                                           \
        do {                                                                        \
                const char *_a = (a), *_b = (b);                                    \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                            \
                        fprintf(stderr, "%s:%d: check failed: %s == %s ('%s' != '%s')\n", \
                                __FILE__, __LINE__, #a, #b, _a ? _a : "(null)",    \
                                _b ? _b : "(null)");                                \
                        abort();                                                    \
                }                                                                   \
        } while (0)
