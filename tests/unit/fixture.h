/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What several unit tests set up alike: a scratch directory made with
 * mkdtemp(), removed with everything below it at the end.
 */
#pragma once

#include <ftw.h>
#include <stdio.h>

#include "check.h"

static inline int fixture_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

/* Removes the scratch directory dir and all below it (links not followed). */
static inline void tmpdir_remove(const char *dir) {
        check(nftw(dir, fixture_remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
}
