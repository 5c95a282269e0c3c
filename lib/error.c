/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

/* Per thread: a placement reads many candidates on two threads
 * (alloc.c). */
static _Thread_local char error_buf[ERROR_MESSAGE_MAX];
static _Thread_local bool error_is_set;

/* text is a temporary, never error_buf itself: a message may be made from
 * the one it replaces (error_get() as an argument). */
static void error_store(const char *text) {
        memcpy(error_buf, text, strlen(text) + 1);
        error_is_set = true;
}

int error_set(int r, const char *fmt, ...) {
        char tmp[ERROR_MESSAGE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(tmp, sizeof tmp, fmt, ap);
        va_end(ap);
        error_store(tmp);
        return r;
}

int error_prefix(int r, const char *fmt, ...) {
        char context[ERROR_MESSAGE_MAX], tmp[ERROR_MESSAGE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(context, sizeof context, fmt, ap);
        va_end(ap);
        if (snprintf(tmp, sizeof tmp, "%s: %s", context, error_get(r)) >= (int) sizeof tmp)
                tmp[sizeof tmp - 1] = '\0'; /* cut, as error_set() cuts */
        error_store(tmp);
        return r;
}

const char *error_get(int r) {
        if (error_is_set)
                return error_buf;
        return strerror(r < 0 ? -r : r);
}

void error_clear(void) {
        error_is_set = false;
        error_buf[0] = '\0';
}

void error_save(ErrorSaved *ret) {
        ret->set = error_is_set;
        memcpy(ret->message, error_buf, sizeof ret->message);
}

int error_restore(int r, const ErrorSaved *saved) {
        memcpy(error_buf, saved->message, sizeof error_buf);
        error_is_set = saved->set;
        return r;
}
