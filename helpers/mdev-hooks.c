/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Placeholder until the CLI lands (issue 2). */
#include <stdio.h>

int main(void) {
        fputs("mdev-hooks: not built yet\n", stderr);
        return 1;
}
