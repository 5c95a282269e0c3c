/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the unit tests of the config's sections (test-config-gpu.c,
 * test-gpu-declared.c) do alike: a config file at config_path (the test
 * sets it, under its scratch directory, before the first load), loaded as
 * mdev-hooks loads one, and a refusal checked by the line it names.
 */
#pragma once

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "config.h"

static char config_path[256];

/* config_load() of text, written to config_path first. */
static inline int config_fixture_load(const char *text, Config **ret, char ***ret_errors) {
        int fd;

        unlink(config_path);
        fd = open(config_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        check(fd >= 0);
        check(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
        return config_load(-1, config_path, ret, ret_errors);
}

/* The config is refused, with an error on line that says what. */
static inline void config_fixture_expect_error(const char *text, unsigned line, const char *what) {
        char **errors = NULL, prefix[300];
        Config *c = NULL;
        bool found = false;

        check(config_fixture_load(text, &c, &errors) == -EINVAL);
        snprintf(prefix, sizeof prefix, "%s:%u: ", config_path, line);
        for (char **e = errors; e && *e; e++)
                found |= strncmp(*e, prefix, strlen(prefix)) == 0 && strstr(*e, what);
        if (!found) {
                fprintf(stderr, "expected line %u: '%s'; got:\n", line, what);
                for (char **e = errors; e && *e; e++)
                        fprintf(stderr, "  %s\n", *e);
                abort();
        }
        strv_free(errors);
}
