/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What several unit tests set up alike: a scratch directory made with
 * mkdtemp(), removed with everything below it at the end, and a sysfs of
 * mdev parents written as plain files under it.
 */
#pragma once

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "util.h"

static inline int fixture_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

/* Removes the scratch directory dir and all below it (links not followed). */
static inline void tmpdir_remove(const char *dir) {
        check(nftw(dir, fixture_remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
}

/* The file PATH under ROOTFD with TEXT, its directories made. */
static inline void fixture_file(int rootfd, const char *path, const char *text) {
        char dir[512];
        int fd;

        snprintf(dir, sizeof dir, "%s", path);
        *strrchr(dir, '/') = '\0';
        check(mkdir_p_at(rootfd, dir, 0755) == 0);
        fd = openat(rootfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        check(fd >= 0);
        check(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
}

/* mdev type TYPE of PARENT under ROOTFD's sys/class/mdev_bus, with
 * AVAILABLE instances left, a create file and a devices directory. */
static inline void fixture_mdev_type(int rootfd, const char *parent, const char *type, unsigned available) {
        char path[512], num[16];

        snprintf(num, sizeof num, "%u\n", available);
        snprintf(path, sizeof path, "sys/class/mdev_bus/%s/mdev_supported_types/%s/available_instances", parent, type);
        fixture_file(rootfd, path, num);
        snprintf(path, sizeof path, "sys/class/mdev_bus/%s/mdev_supported_types/%s/create", parent, type);
        fixture_file(rootfd, path, "");
        snprintf(path, sizeof path, "sys/class/mdev_bus/%s/mdev_supported_types/%s/devices", parent, type);
        check(mkdir_p_at(rootfd, path, 0755) == 0);
}
