/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Running a command with a timeout: `command "$1"` through /bin/sh, its
 * stdout and stderr handed to a callback line by line, and the command killed
 * with its whole process group when the time is up. The [sriov] command
 * (sriov.c) runs this way from the udev helper, which udev kills if it takes
 * too long.
 */
#pragma once

#include <stdbool.h>

/* One line of the command's output, without its newline; never empty. A
 * line longer than the reader's buffer (1 KiB) comes in pieces. */
typedef void (*SpawnLineFunc)(const char *line, void *userdata);

typedef struct SpawnResult {
        bool timed_out; /* killed after timeout_sec; status is then meaningless */
        int status;     /* waitpid()'s status: WIFEXITED(), WEXITSTATUS() ... */
} SpawnResult;

/* Runs `command "$1"` with $1 = arg through /bin/sh, stdin from /dev/null,
 * in a process group of its own, with a default PATH when the environment
 * has none (udev gives only the event's properties). Each line it writes goes
 * to line_fn (may be NULL). 0 with *ret filled once it has ended or been
 * killed; -errno (with error_set()) when it could not be run or waited for. */
int spawn_shell(const char *command, const char *arg, unsigned timeout_sec,
                SpawnLineFunc line_fn, void *userdata, SpawnResult *ret);
