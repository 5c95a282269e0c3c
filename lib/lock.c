/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host-wide lock (lock.h).
 *
 * The wait is a blocking flock() cut short by a one-shot ITIMER_REAL: the
 * SIGALRM handler is installed without SA_RESTART, so flock() returns EINTR
 * when the time is up. A waiter therefore gets the lock the moment it is
 * freed (no polling interval), and never waits longer than lock_timeout.
 * The previous SIGALRM disposition and timer are restored afterwards.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/time.h>

#include "lock.h"

#define LOCK_DIR "run/mdev-hooks"

static volatile sig_atomic_t lock_alarm_fired;

static void lock_alarm(int sig) {
        lock_alarm_fired = 1;
}

int lock_wait_usec(int fd, unsigned long long usec) {
        struct sigaction sa = { .sa_handler = lock_alarm }, old_sa;
        struct timeval tv = { .tv_sec = (time_t) (usec / 1000000ULL), .tv_usec = (suseconds_t) (usec % 1000000ULL) };
        /* periodic: a tick that comes before flock() blocks is followed by
         * another one */
        struct itimerval it = { .it_value = tv, .it_interval = tv }, old_it;
        int r;

        if (usec == 0) /* a zero timer would never fire */
                return flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0; /* no SA_RESTART: flock must return EINTR */
        if (sigaction(SIGALRM, &sa, &old_sa) < 0)
                return -errno;
        lock_alarm_fired = 0;
        if (setitimer(ITIMER_REAL, &it, &old_it) < 0) {
                r = -errno;
                (void) sigaction(SIGALRM, &old_sa, NULL);
                return r;
        }
        for (;;) {
                if (flock(fd, LOCK_EX) == 0) {
                        r = 0;
                        break;
                }
                if (errno != EINTR) {
                        r = -errno;
                        break;
                }
                if (lock_alarm_fired) {
                        r = -ETIMEDOUT;
                        break;
                }
        }
        (void) setitimer(ITIMER_REAL, &old_it, NULL);
        (void) sigaction(SIGALRM, &old_sa, NULL);
        return r;
}

/* Takes the lock on an open fd, waiting up to timeout_sec (while_waiting
 * first, when it must wait: lock_acquire_waiting()); on success says who
 * holds it, for a waiter that times out. */
static int lock_take(int fd, unsigned timeout_sec, const char *what, void (*while_waiting)(void *), void *userdata) {
        char holder[256];
        int r;

        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK)
                        return error_set(-errno, "cannot lock '/" LOCK_PATH "': %s", strerror(errno));
                if (while_waiting)
                        while_waiting(userdata);
                r = timeout_sec > 0 ? lock_wait_usec(fd, timeout_sec * 1000000ULL) : -ETIMEDOUT;
                if (r == -ETIMEDOUT) {
                        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
                        unsigned pid = 0;
                        char *p;

                        holder[n > 0 ? n : 0] = '\0';
                        p = strchr(holder, '\n');
                        if (p)
                                *p = '\0';
                        p = strchr(holder, ' ');
                        if (p)
                                *p++ = '\0';
                        if (safe_atou(holder, &pid) < 0 || pid == 0)
                                return error_set(r, "timed out after %u s waiting for the lock '/" LOCK_PATH "' (holder unknown); raise lock_timeout in [hooks] if this is expected", timeout_sec);
                        return error_set(r, "timed out after %u s waiting for the lock '/" LOCK_PATH "' held by pid %u (%s); raise lock_timeout in [hooks] if this is expected",
                                         timeout_sec, pid, p && *p ? p : "?");
                }
                if (r < 0)
                        return error_set(r, "cannot lock '/" LOCK_PATH "': %s", strerror(-r));
        }

        /* Not critical. Only the first line counts (see above), so an earlier
         * holder's longer line may stay behind it: no ftruncate(), which
         * costs a journal transaction where /run is not a tmpfs. */
        r = snprintf(holder, sizeof holder, "%ld %s\n", (long) getpid(), strempty(what));
        if (r > 0 && (size_t) r < sizeof holder)
                (void) !pwrite(fd, holder, (size_t) r, 0);
        return 0;
}

int lock_acquire(int rootfd, unsigned timeout_sec, const char *what, int *ret_fd) {
        return lock_acquire_waiting(rootfd, timeout_sec, what, NULL, NULL, ret_fd);
}

int lock_acquire_waiting(int rootfd, unsigned timeout_sec, const char *what, void (*while_waiting)(void *),
                         void *userdata, int *ret_fd) {
        _cleanup_close_ int fd = -1;
        int r;

        /* Its directory is made the first time only: /run is empty at boot. */
        fd = openat(rootfd, LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0 && errno == ENOENT) {
                r = mkdir_p_at(rootfd, LOCK_DIR, 0755);
                if (r < 0)
                        return error_set(r, "cannot create '/" LOCK_DIR "': %s", strerror(-r));
                fd = openat(rootfd, LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        }
        if (fd < 0)
                return error_set(-errno, "cannot open the lock '/" LOCK_PATH "': %s", strerror(errno));
        r = lock_take(fd, timeout_sec, what, while_waiting, userdata);
        if (r < 0)
                return r;
        *ret_fd = steal_fd(&fd);
        return 0;
}

int lock_suspend(int fd) {
        if (flock(fd, LOCK_UN) < 0)
                return error_set(-errno, "cannot let go of the lock '/" LOCK_PATH "': %s", strerror(errno));
        return 0;
}

int lock_resume(int fd, unsigned timeout_sec, const char *what) {
        return lock_take(fd, timeout_sec, what, NULL, NULL);
}
