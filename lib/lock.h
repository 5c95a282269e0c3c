/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host-wide lock (doc/design.md §4.2): flock(LOCK_EX) on run/mdev-hooks/lock
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
/* lock_acquire(), and when another holds the lock, first while_waiting
 * (userdata): work that needs no lock, done in the time the caller would
 * wait anyway, and not at all when the lock is free (a prepare opens its
 * candidates' files then: alloc_preopen()). */
int lock_acquire_waiting(int rootfd, unsigned timeout_sec, const char *what, void (*while_waiting)(void *),
                         void *userdata, int *ret_fd);

/* Blocks in flock(LOCK_EX) on an open lock fd for at most about usec (0: try
 * once): 0 with the lock taken, -ETIMEDOUT, or -errno; sets no message. The
 * timer that cuts the wait short (SIGALRM without SA_RESTART) runs only
 * around flock(), so that no other call sees EINTR. For a caller that looks
 * between slices whether it still needs the lock (the udev helper). */
int lock_wait_usec(int fd, unsigned long long usec);

/* Lets other hooks have the lock held on fd during a long wait that needs
 * none (prepare waiting up to parent_wait for a parent to register), so one
 * guest's wait does not make every other guest's start time out. The caller
 * must re-check what it read before, once lock_resume() has it back. */
int lock_suspend(int fd);
/* Takes the lock on fd again, waiting up to timeout_sec; -ETIMEDOUT with a
 * message as lock_acquire() gives. */
int lock_resume(int fd, unsigned timeout_sec, const char *what);
