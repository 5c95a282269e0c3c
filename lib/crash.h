/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Crash points for the crash-safety tests (doc/design.md §4.4). Built with
 * -Dcrashpoints=true (the test build only), CRASHPOINT("name") kills the
 * process with SIGKILL when MDEV_HOOKS_CRASH_AT equals "name". In a normal
 * build it compiles to nothing and the environment variable is never read.
 *
 * Names in use (keep this list current):
 *   prepare-after-create        sysfs create written, record not yet written
 *   prepare-after-record        one mdev recorded, the next not yet handled
 *   release-after-remove        sysfs remove written, record not yet changed
 *   migrate-after-create        migrate created an mdev, record not yet written
 */
#pragma once

#if MDEV_HOOKS_CRASHPOINTS
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void crashpoint(const char *name) {
        const char *at = getenv("MDEV_HOOKS_CRASH_AT");

        if (at && strcmp(at, name) == 0)
                kill(getpid(), SIGKILL);
}
#define CRASHPOINT(name) crashpoint(name)
#else
#define CRASHPOINT(name) do { } while (0)
#endif
