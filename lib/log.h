/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging for programs without a terminal (the hook, the udev helper) and
 * for the CLI. One line per message, to stderr and to syslog, in the form
 *
 *     mdev-hooks: <subject>: <message>
 *
 * where the subject is the guest (hook), the device (udev helper) or absent
 * (CLI). The level comes from MDEV_HOOKS_LOG_LEVEL (a syslog level number or
 * name: err, warning, notice, info, debug), default "notice" for stderr;
 * syslog always gets warnings and errors.
 */
#pragma once

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

typedef enum LogTarget {
        LOG_TARGET_STDERR = 1 << 0,
        LOG_TARGET_SYSLOG = 1 << 1,
} LogTarget;

/* ident is the syslog identifier ("mdev-hooks-qemu"); targets is a LogTarget
 * mask. Reads MDEV_HOOKS_LOG_LEVEL. Call once from main(). */
void log_open(const char *ident, unsigned targets);
void log_close(void);
void log_set_level(int level);
int log_get_level(void);
/* Subject printed after "mdev-hooks: ". NULL for none. The string is copied. */
void log_set_subject(const char *subject);

void log_msg(int level, const char *fmt, ...) _printf_(2, 3);

/* Hold mode, for library code that must not report a thing done before it
 * is durable (the udev helper's batch of record changes, uevent.c): from
 * log_hold() on, messages are kept, in order, and log_release() writes
 * them out and ends the hold. A message that cannot be kept (out of memory)
 * is written at once rather than lost. */
void log_hold(void);
void log_release(void);

#define log_error(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
