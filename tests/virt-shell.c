/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * virt-shell: libvirt's test driver, kept for a whole test, with
 * `mdev-hooks attach` and `detach` run inside it.
 *
 * The test driver keeps its guests in the memory of the process that opened
 * it: a guest defined by one program is gone for the next. This program
 * holds test:///default open from start to end, so that the commands it
 * runs meanwhile, in this process, see and change one set of guests: every
 * virConnectOpen("test:///default") in a process shares that state while
 * one connection to it is open. The mdev-hooks commands are the real ones
 * (helpers/cli-attach.c, what mdev-hooks-reconcile runs), called with the
 * argv the CLI gives them.
 *
 *   virt-shell CMD ARGS... [';' CMD ARGS...]...
 *     define FILE               define a guest from FILE
 *     start GUEST               start it (the test driver runs nothing)
 *     dumpxml GUEST [--inactive]
 *     metadata GUEST URI [--live]   the metadata element of namespace URI,
 *                                   or "(none)"
 *     mdev-hooks [--config FILE] attach|detach ARGS...
 *                               prints "[exit N]" after it
 *
 * Exits 0 when every command of its own worked (a mdev-hooks command's
 * status is printed, not returned), 1 otherwise, 2 on bad usage.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "cli.h"
#include "log.h"
#include "util.h"

#define URI "test:///default"

static void silent(void *userdata, virErrorPtr err) {
}

static const char *message(void) {
        const char *m = virGetLastErrorMessage();
        return m ? m : "unknown libvirt error";
}

static virDomainPtr lookup(virConnectPtr conn, const char *name) {
        virDomainPtr d = virDomainLookupByName(conn, name);

        if (!d)
                fprintf(stderr, "virt-shell: no guest '%s': %s\n", name, message());
        return d;
}

static int run(virConnectPtr conn, int argc, char **argv) {
        virDomainPtr d = NULL;
        int r = 0;

        if (argc == 2 && streq(argv[0], "define")) {
                _cleanup_free_ char *xml = NULL;
                _cleanup_close_ int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
                size_t len;

                if (fd < 0 || read_fd_full(fd, 16u << 20, &xml, &len) < 0) {
                        fprintf(stderr, "virt-shell: cannot read '%s'\n", argv[1]);
                        return 1;
                }
                d = virDomainDefineXML(conn, xml);
                if (!d) {
                        fprintf(stderr, "virt-shell: cannot define '%s': %s\n", argv[1], message());
                        return 1;
                }
        } else if (argc == 2 && streq(argv[0], "start")) {
                d = lookup(conn, argv[1]);
                if (!d || virDomainCreate(d) < 0) {
                        fprintf(stderr, "virt-shell: cannot start '%s': %s\n", argv[1], message());
                        r = 1;
                }
        } else if ((argc == 2 || (argc == 3 && streq(argv[2], "--inactive"))) && streq(argv[0], "dumpxml")) {
                char *xml;

                d = lookup(conn, argv[1]);
                xml = d ? virDomainGetXMLDesc(d, argc == 3 ? VIR_DOMAIN_XML_INACTIVE : 0) : NULL;
                if (!xml)
                        r = 1;
                else
                        fputs(xml, stdout);
                free(xml);
        } else if ((argc == 3 || (argc == 4 && streq(argv[3], "--live"))) && streq(argv[0], "metadata")) {
                char *m;

                d = lookup(conn, argv[1]);
                if (!d)
                        return 1;
                m = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, argv[2],
                                         argc == 4 ? VIR_DOMAIN_AFFECT_LIVE : VIR_DOMAIN_AFFECT_CONFIG);
                printf("%s\n", m ? m : "(none)");
                free(m);
        } else if (argc >= 2 && streq(argv[0], "mdev-hooks")) {
                const char *config = NULL;
                int k = 1, status;

                if (argc >= 4 && streq(argv[1], "--config")) {
                        config = argv[2];
                        k = 3;
                }
                if (streq(argv[k], "attach"))
                        status = cli_attach_main(argc - k, argv + k, config);
                else if (streq(argv[k], "detach"))
                        status = cli_detach_main(argc - k, argv + k, config);
                else {
                        fprintf(stderr, "virt-shell: mdev-hooks %s: only attach and detach run here\n", argv[k]);
                        return 2;
                }
                fflush(stderr);
                printf("[exit %d]\n", status);
        } else {
                fprintf(stderr, "virt-shell: unknown command or arguments: %s\n", argv[0]);
                return 2;
        }
        fflush(stdout);
        if (d)
                virDomainFree(d);
        return r;
}

int main(int argc, char *argv[]) {
        virConnectPtr conn;
        int start = 1, r = 0;

        log_open("mdev-hooks", LOG_TARGET_STDERR);
        virSetErrorFunc(NULL, silent);
        conn = virConnectOpen(URI);
        if (!conn) {
                fprintf(stderr, "virt-shell: cannot open %s: %s\n", URI, message());
                return 1;
        }
        for (int i = 1; i <= argc && r == 0; i++) {
                if (i < argc && !streq(argv[i], ";"))
                        continue;
                if (i > start) {
                        argv[i < argc ? i : argc] = NULL;
                        r = run(conn, i - start, argv + start);
                }
                start = i + 1;
        }
        virConnectClose(conn);
        log_close();
        return r;
}
