/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the libFuzzer harnesses (tests/fuzz/README.md). A property that
 * does not hold is reported with FUZZ_CHECK(): the message goes to stderr and
 * the process aborts, which libFuzzer records as a crash with its input.
 */
#pragma once

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond, ...)                                                  \
        do {                                                                   \
                if (!(cond)) {                                                 \
                        fprintf(stderr, "fuzz property failed: %s (%s:%d): ",  \
                                #cond, __FILE__, __LINE__);                    \
                        fprintf(stderr, __VA_ARGS__);                          \
                        fputc('\n', stderr);                                   \
                        abort();                                               \
                }                                                              \
        } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
