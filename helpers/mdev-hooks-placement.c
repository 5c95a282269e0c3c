/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-placement: the program behind `mdev-hooks placement sync`
 * (cli-placement.c). It alone links libcurl, whose libraries (TLS,
 * Kerberos, LDAP, ...) every other command would otherwise load
 * (mdev-hooks.c says more).
 */
#include "cli.h"

int main(int argc, char *argv[]) {
        return cli_libexec_main(argc, argv, "mdev-hooks-placement", "placement", cli_placement_main);
}
