/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The library's error message: one line per thread that says what failed and
 * why, for the program's main() to print once.
 *
 * Library functions return a negative errno. Where the caller cannot know the
 * detail (which path, which line), the function also sets a message with
 * error_set(), which returns its first argument so it can be used as
 * `return error_set(-EINVAL, "'%s': not a number", path);`.
 *
 * Adding context keeps the cause: error_prefix(r, "cannot look up mdev %s",
 * uuid) turns the message a callee set ("'/sys/...': Permission denied") into
 * "cannot look up mdev <uuid>: '/sys/...': Permission denied". Every message
 * is formatted through a temporary, so passing error_get() as an argument to
 * error_set() or error_prefix() is safe.
 *
 * A rollback may set messages of its own; error_save() before it and
 * error_restore() after it give the caller back the reason it failed for.
 *
 * libc only: the hook's program links it (lib/meson.build, base_sources).
 */
#pragma once

#include <stdbool.h>

#include "macro.h"

/* The longest message kept, with its NUL; longer ones are cut. */
#define ERROR_MESSAGE_MAX 1024

int error_set(int r, const char *fmt, ...) _printf_(2, 3);
/* Sets "<fmt ...>: <cause>", where the cause is the message set so far, or
 * strerror(-r) when none is. Returns r. */
int error_prefix(int r, const char *fmt, ...) _printf_(2, 3);
/* The last message set, or strerror(-r) if none was set since error_clear(). */
const char *error_get(int r);
void error_clear(void);

/* A copy of the message state, for a rollback that may overwrite it. */
typedef struct ErrorSaved {
        bool set;
        char message[ERROR_MESSAGE_MAX];
} ErrorSaved;

void error_save(ErrorSaved *ret);
/* Puts the saved state back and returns r:
 *     ErrorSaved why;
 *     error_save(&why);
 *     (void) undo_everything();
 *     return error_restore(r, &why); */
int error_restore(int r, const ErrorSaved *saved);
