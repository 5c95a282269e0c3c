/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * log.c's hold mode: messages logged between log_hold() and log_release()
 * are written only at the release, in order and at their own levels, and
 * a message below the level is dropped then as it would be at once.
 */
#include <fcntl.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

/* What stderr received since the last call (stderr is a temporary file). */
static void stderr_take(char *buf, size_t size) {
        off_t end;
        ssize_t n;

        fflush(stderr);
        end = lseek(STDERR_FILENO, 0, SEEK_CUR);
        check(end >= 0 && (size_t) end < size);
        n = pread(STDERR_FILENO, buf, (size_t) end, 0);
        check(n == end);
        buf[n] = '\0';
        check(ftruncate(STDERR_FILENO, 0) == 0);
        check(lseek(STDERR_FILENO, 0, SEEK_SET) == 0);
}

int main(void) {
        char path[] = "/tmp/test-log-XXXXXX", buf[1024];
        int fd = mkstemp(path);

        check(fd >= 0);
        check(unlink(path) == 0);
        check(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
        close(fd);

        log_open("test-log", LOG_TARGET_STDERR);
        log_set_level(LOG_NOTICE);
        log_set_subject("0000:41:00.0");

        log_notice("at once");
        stderr_take(buf, sizeof buf);
        check_streq(buf, "mdev-hooks: 0000:41:00.0: at once\n");

        log_hold();
        log_warning("first");
        log_debug("below the level");
        log_notice("second %d", 2);
        stderr_take(buf, sizeof buf);
        check_streq(buf, "");
        log_release();
        stderr_take(buf, sizeof buf);
        check_streq(buf, "mdev-hooks: 0000:41:00.0: first\nmdev-hooks: 0000:41:00.0: second 2\n");

        /* The hold has ended. */
        log_notice("after");
        stderr_take(buf, sizeof buf);
        check_streq(buf, "mdev-hooks: 0000:41:00.0: after\n");

        /* log_close() writes what is still held. */
        log_hold();
        log_error("held at close");
        log_close();
        stderr_take(buf, sizeof buf);
        check_streq(buf, "mdev-hooks: 0000:41:00.0: held at close\n");
        return 0;
}
