/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host-wide lock (DESIGN.md §4): flock(LOCK_EX) on run/mdev-hooks/lock
 * under the root. Every change of the record and of sysfs happens under it.
 */
#pragma once

#include "util.h"

#define LOCK_PATH "run/mdev-hooks/lock" /* under the root */

/* Takes the lock, waiting up to timeout_sec seconds (0: try once). Creates
 * run/mdev-hooks/ if needed. On success *ret_fd holds the lock until closed.
 * After taking it, writes "<pid> <what>\n" into the file so that a waiter
 * that times out can name the holder.
 * -ETIMEDOUT (message names the holder and the lock_timeout setting) or
 * -errno. */
int lock_acquire(int rootfd, unsigned timeout_sec, const char *what, int *ret_fd);
