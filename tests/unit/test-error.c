/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The library's error message (error.c): context added in front keeps the
 * cause, a message made from the one it replaces comes out whole, and a
 * saved message survives a rollback that sets its own.
 */
#include <string.h>

#include "check.h"
#include "error.h"

static void test_set_and_get(void) {
        error_clear();
        check_streq(error_get(-ENOENT), strerror(ENOENT));
        check(error_set(-EINVAL, "'%s' is not a number", "x") == -EINVAL);
        check_streq(error_get(-EINVAL), "'x' is not a number");
        error_clear();
        check_streq(error_get(-EINVAL), strerror(EINVAL));
}

static void test_prefix_keeps_cause(void) {
        error_clear();
        error_set(-EACCES, "cannot read '/sys/bus/mdev/devices/u/mdev_type': Permission denied");
        check(error_prefix(-EACCES, "cannot look up mdev %s", "u") == -EACCES);
        check_streq(error_get(-EACCES), "cannot look up mdev u: cannot read '/sys/bus/mdev/devices/u/mdev_type': Permission denied");
        /* Twice: each layer keeps what was below it. */
        error_prefix(-EACCES, "prepare of '%s'", "web1");
        check_streq(error_get(-EACCES), "prepare of 'web1': cannot look up mdev u: cannot read '/sys/bus/mdev/devices/u/mdev_type': Permission denied");
}

static void test_prefix_without_message_uses_errno(void) {
        error_clear();
        error_prefix(-ENOSPC, "cannot create mdev %s", "u");
        check_streq(error_get(-ENOSPC), "cannot create mdev u: No space left on device");
}

/* The form hook.c and migrate.c use: the old message as an argument of the
 * new one. It is read from the buffer that is written, so it must be
 * formatted through a temporary. */
static void test_set_from_itself(void) {
        error_clear();
        error_set(-EIO, "cannot read '%s': %s", "/sys/x", "Input/output error");
        error_set(-EIO, "cannot look up mdev %s: %s", "u", error_get(-EIO));
        check_streq(error_get(-EIO), "cannot look up mdev u: cannot read '/sys/x': Input/output error");
        /* The message first, where an overlapping copy would repeat it. */
        error_set(-EIO, "%s (again)", error_get(-EIO));
        check_streq(error_get(-EIO), "cannot look up mdev u: cannot read '/sys/x': Input/output error (again)");
        /* And as an argument of error_prefix(). */
        error_prefix(-EIO, "%s", error_get(-EIO));
        check(strncmp(error_get(-EIO), "cannot look up mdev u", 21) == 0);
        check(strstr(error_get(-EIO), "(again): cannot look up mdev u"));
}

static void test_long_messages_are_cut(void) {
        char big[3 * ERROR_MESSAGE_MAX];

        memset(big, 'a', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        error_set(-E2BIG, "%s", big);
        check(strlen(error_get(-E2BIG)) == ERROR_MESSAGE_MAX - 1);
        error_prefix(-E2BIG, "%s", big);
        check(strlen(error_get(-E2BIG)) == ERROR_MESSAGE_MAX - 1);
}

static void test_save_restore(void) {
        ErrorSaved why;

        error_set(-EBUSY, "mdev u is held by guest 'db1'");
        error_save(&why);
        error_set(-EIO, "rollback left something behind");
        check(error_restore(-EBUSY, &why) == -EBUSY);
        check_streq(error_get(-EBUSY), "mdev u is held by guest 'db1'");

        /* Nothing set before: nothing set after, even if the rollback set one. */
        error_clear();
        error_save(&why);
        error_set(-EIO, "rollback left something behind");
        error_restore(-ENOSPC, &why);
        check_streq(error_get(-ENOSPC), strerror(ENOSPC));
}

int main(void) {
        test_set_and_get();
        test_prefix_keeps_cause();
        test_prefix_without_message_uses_errno();
        test_set_from_itself();
        test_long_messages_are_cut();
        test_save_restore();
        return 0;
}
