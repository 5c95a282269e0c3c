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
 *   prepare-before-sync         prepare made everything and let the lock
 *                               go; the record's directory not yet fsynced
 *   attach-after-metadata       attach wrote the metadata entries, no hostdev yet
 *   attach-after-claim          attach --live claimed and created, not plugged
 *   attach-after-hotplug        attach --live plugged, the definition not yet
 *   detach-after-unplug         the guest gave it back, the record not yet freed
 *   detach-before-metadata      detach took the hostdev, not yet its entry
 *
 * FAILPOINT("name") (same build only) is true when MDEV_HOOKS_FAIL_AT equals
 * "name", for a failure the tests cannot cause otherwise. Names in use:
 *   prepare-sync                the fsync of the record's directory fails
 *
 * PAUSEPOINT("name") (same build only) lets a test act in the middle of a
 * run without guessing at timing: when MDEV_HOOKS_PAUSE_AT is "name" or
 * "name:N" (the Nth time the point is reached, default the first), the
 * process creates the file MDEV_HOOKS_PAUSE_FILE and waits until the test
 * removes it (at most 120 s), once per process; "name:every" pauses each
 * time. Names in use:
 *   placement-after-fetch       placement sync read Placement, wrote nothing yet
 *   placement-write             placement sync is about to send a write
 *   placement-allocations-read  read a consumer's allocations, not yet written
 *   prepare-before-sync         as the crash point of that name
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

static inline int failpoint(const char *name) {
        const char *at = getenv("MDEV_HOOKS_FAIL_AT");

        return at && strcmp(at, name) == 0;
}
#define FAILPOINT(name) failpoint(name)

#include <fcntl.h>
#include <time.h>

static inline void pausepoint(const char *name) {
        static unsigned hits;
        static int done;
        const char *at = getenv("MDEV_HOOKS_PAUSE_AT"), *file = getenv("MDEV_HOOKS_PAUSE_FILE");
        size_t l = strlen(name);
        unsigned want = 1;
        int fd;

        if (done || !at || !file || strncmp(at, name, l) != 0 || (at[l] && at[l] != ':'))
                return;
        if (at[l] == ':' && strcmp(at + l + 1, "every") == 0)
                want = 0;
        else if (at[l] == ':')
                want = (unsigned) strtoul(at + l + 1, NULL, 10);
        if (++hits < want)
                return;
        done = want > 0;
        fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return;
        close(fd);
        for (int i = 0; i < 12000 && access(file, F_OK) == 0; i++)
                nanosleep(&(struct timespec) { .tv_nsec = 10000000 }, NULL);
}
#define PAUSEPOINT(name) pausepoint(name)
#else
#define CRASHPOINT(name) do { } while (0)
#define FAILPOINT(name) 0
#define PAUSEPOINT(name) do { } while (0)
#endif
