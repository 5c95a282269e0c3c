/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-reconcile: `mdev-hooks reconcile`, in a program of its own.
 *
 * reconcile is the one command that uses libvirt's API, and libvirt pulls in
 * some sixty shared libraries (glib, gnutls, ...) whose loading alone costs
 * more than all the rest of `mdev-hooks types`. The CLI therefore does not
 * link libvirt: its `reconcile` entry execs this program (helpers/mdev-hooks.c:
 * reconcile_exec()) as
 *
 *     mdev-hooks-reconcile [--config FILE] reconcile [OPTIONS]
 */
#include "log.h"
#include "reconcile.h"
#include "util.h"

int main(int argc, char *argv[]) {
        const char *config_path = NULL;
        int r;

        log_open("mdev-hooks", LOG_TARGET_STDERR);
        if (argc == 2 && streq(argv[1], "--help")) {
                puts("Usage: mdev-hooks-reconcile reconcile [OPTIONS]\n"
                     "\n"
                     "The program behind 'mdev-hooks reconcile' (it alone links libvirt);\n"
                     "run that instead. 'mdev-hooks reconcile --help' lists the options.\n"
                     "\n"
                     "  --help     show this help\n"
                     "  --version  show the version");
                return 0;
        }
        if (argc == 2 && streq(argv[1], "--version")) {
                puts("mdev-hooks-reconcile " PACKAGE_VERSION);
                return 0;
        }
        argc--, argv++;
        if (argc >= 2 && streq(argv[0], "--config")) {
                config_path = argv[1];
                argc -= 2, argv += 2;
        }
        if (argc < 1 || !streq(argv[0], "reconcile")) {
                log_error("mdev-hooks-reconcile is run by 'mdev-hooks reconcile'; use that");
                return 2;
        }
        r = reconcile_main(argc, argv, config_path);
        if (fflush(stdout) != 0 && r == 0) {
                log_error("cannot write the output: %s", strerror(errno));
                r = 1;
        }
        log_close();
        return r;
}
