/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * domxml-check < domain.xml: the checks the qemu hook's prepare runs on its
 * stdin (domxml_parse()), as a program for the bats tests, which hold every
 * XML that migrate or restore prints to them: the project must accept what
 * it writes. Prints the mdev hostdevs' UUIDs in document order and exits 0,
 * or prints the refusal and exits 1.
 */
#include <stdio.h>
#include <unistd.h>

#include "domscan.h"
#include "domxml.h"
#include "util.h"

int main(void) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_fd_full(STDIN_FILENO, DOMXML_MAX_SIZE, &buf, &len);
        if (r < 0) {
                fprintf(stderr, "domxml-check: cannot read stdin: %s\n", strerror(-r));
                return 1;
        }
        r = domxml_parse(buf, len, &d);
        if (r < 0) {
                fprintf(stderr, "domxml-check: refused: %s\n", error_get(r));
                return 1;
        }
        for (size_t i = 0; i < d->n_mdevs; i++)
                printf("%s\n", d->mdevs[i].uuid);
        return 0;
}
