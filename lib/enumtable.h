/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One string table per enum, like libvirt's VIR_ENUM_DECL and VIR_ENUM_IMPL:
 *
 *     ENUM_DECL(hook_op, HookOp);                         in the header
 *     ENUM_IMPL(hook_op, HookOp, _HOOK_OP_MAX,            in the .c file
 *               "start", "stopped", "prepare", ...);
 *
 * give hook_op_to_string(), NULL for a value out of range, and
 * hook_op_from_string(), which returns -EINVAL (as the enum's type; give
 * the enum an _INVALID = -EINVAL member) for NULL or an unknown string. The
 * strings are listed in the enum's order, one for each value below max:
 * checked at build time.
 *
 * libc only.
 */
#pragma once

#include <errno.h>
#include <string.h>

#include "macro.h"

#define ENUM_DECL(name, type)                    \
        const char *name##_to_string(type v);   \
        type name##_from_string(const char *s)

#define ENUM_IMPL(name, type, max, ...)                                                    \
        static const char *const name##_table[] = { __VA_ARGS__ };                         \
        const char *name##_to_string(type v) {                                             \
                if ((int) v < 0 || (int) v >= (int) (max))                                 \
                        return NULL;                                                       \
                return name##_table[v];                                                    \
        }                                                                                  \
        type name##_from_string(const char *s) {                                           \
                for (int i_ = 0; s && i_ < (int) (max); i_++)                              \
                        if (strcmp(name##_table[i_], s) == 0)                              \
                                return (type) i_;                                          \
                return (type) -EINVAL;                                                     \
        }                                                                                  \
        _Static_assert(ELEMENTSOF(name##_table) == (max), #name ": one string per value")
