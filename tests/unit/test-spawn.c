/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * spawn_shell() (spawn.c): the command's output comes to the callback line
 * by line, its exit status is returned, and a command that outlives its
 * timeout is killed with what it started.
 */
#include <sys/wait.h>

#include "check.h"
#include "spawn.h"
#include "util.h"

static void collect(const char *line, void *userdata) {
        char ***lines = userdata;

        check(*line != '\0');
        check(strv_extend(lines, line) >= 0);
}

static void test_lines_and_status(void) {
        _cleanup_strv_free_ char **lines = NULL;
        SpawnResult res;

        /* printf "$1": three lines, the last without its newline, and an
         * empty one that is not passed on. */
        check(spawn_shell("printf", "one\\n\\ntwo\\nthree", 10, collect, &lines, &res) == 0);
        check(!res.timed_out);
        check(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0);
        check(strv_length(lines) == 3);
        check_streq(lines[0], "one");
        check_streq(lines[1], "two");
        check_streq(lines[2], "three");
}

static void test_stderr_and_failure(void) {
        _cleanup_strv_free_ char **lines = NULL;
        SpawnResult res;

        check(spawn_shell("f() { echo \"no such PF: $1\" >&2; return 4; }; f", "0000:84:00.0", 10, collect, &lines, &res) == 0);
        check(!res.timed_out);
        check(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 4);
        check(strv_length(lines) == 1);
        check_streq(lines[0], "no such PF: 0000:84:00.0");
}

/* The command and the child it leaves behind holding the pipe: both go,
 * and the call returns although the child would keep the output open. */
static void test_timeout_kills_the_group(void) {
        SpawnResult res;

        check(spawn_shell("sleep 60 & sleep", "60", 1, NULL, NULL, &res) == 0);
        check(res.timed_out);
}

int main(void) {
        test_lines_and_status();
        test_stderr_and_failure();
        test_timeout_kills_the_group();
        return 0;
}
