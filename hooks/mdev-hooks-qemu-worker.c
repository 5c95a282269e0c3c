/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-qemu-worker.so: loaded by mdev-hooks-qemu (dlopen, in the same
 * process; worker.h) when the domain XML may hold an mdev hostdev. Parses
 * the XML the front end read, loads the config, opens the record, takes the
 * host-wide lock and runs the operation.
 *
 * A module rather than a program of its own: a second execve() and a second
 * start of the dynamic loader and libc, and a copy of the XML through a
 * memfd, cost an eighth of every prepare.
 *
 * Exit status: 0 done (always for release and reconnect, which libvirt
 * ignores or which must never fail); 1 when prepare, migrate or restore
 * failed, with one line on stderr that libvirt shows to the user.
 */
#include <stdio.h>

#include "config.h"
#include "domxml.h"
#include "hook.h"
#include "ledger.h"
#include "lock.h"
#include "log.h"
#include "util.h"
#include "worker.h"

static int run(HookOp op, const char *guest, const char *xml, size_t xml_len, HookContext *ctx) {
        _cleanup_config_free_ Config *config = NULL;
        _cleanup_domxml_free_ Domxml *dom = NULL;
        _cleanup_strv_free_ char **errors = NULL;
        _cleanup_close_ int rootfd = -1, ledgerfd = -1, lockfd = -1;
        char what[GUEST_NAME_MAX + 32];
        int r;

        r = domxml_parse(xml, xml_len, &dom);
        if (r < 0) {
                /* release goes by the record, not by the XML: still free what
                 * the guest holds. Everything else stops here. */
                if (op != HOOK_OP_RELEASE)
                        return r;
                log_warning("%s; releasing by the record alone", error_get(r));
                error_clear();
        } else if (dom->n_mdevs == 0 && op != HOOK_OP_RELEASE)
                return 0; /* the front's scan over-reported */

        r = root_open(&rootfd);
        if (r < 0)
                return r;
        r = config_load(rootfd, NULL, &config, &errors);
        if (r < 0) {
                if (errors && errors[0])
                        return error_set(r, "the config has errors, fix it first (mdev-hooks check-config): %s", errors[0]);
                return r;
        }
        *ctx = (HookContext) {
                .lockfd = -1,
                .rootfd = rootfd,
                .config = config,
                .dom = dom,
                .guest = guest,
        };
        r = boot_id_read(rootfd, ctx->boot_id);
        if (r < 0)
                return r;
        r = ledger_open(rootfd, &ledgerfd);
        if (r < 0)
                return r;
        ctx->ledgerfd = ledgerfd;

        snprintf(what, sizeof what, "%s %s", hook_op_to_string(op), guest);
        r = lock_acquire(rootfd, config->lock_timeout, what, &lockfd);
        if (r < 0)
                return r;
        ctx->lockfd = lockfd;

        switch (op) {
        case HOOK_OP_PREPARE:
                return hook_prepare(ctx);
        case HOOK_OP_RELEASE:
                return hook_release(ctx);
        case HOOK_OP_RECONNECT:
                return hook_reconnect(ctx);
        case HOOK_OP_MIGRATE:
        case HOOK_OP_RESTORE:
                r = migrate_run(ctx, op);
                if (r >= 0 && ctx->rewritten)
                        r = domxml_write(dom, STDOUT_FILENO);
                return r;
        default:
                return 0;
        }
}

int mdev_hooks_qemu_worker(int argc, char **argv, const char *xml, size_t xml_len) {
        HookContext ctx = { .rootfd = -1, .ledgerfd = -1, .lockfd = -1 };
        HookOp op;
        int r;

        if (argc < 3) {
                fprintf(stderr, "usage: %s <guest> <operation> <sub-operation> <extra>\n", program_invocation_short_name);
                return 2;
        }
        op = hook_op_from_string(argv[2]);
        if (op < 0)
                return 0;

        log_open("mdev-hooks-qemu", LOG_TARGET_STDERR | LOG_TARGET_SYSLOG);
        log_set_subject(argv[1]);
        if (argv[1][0] == '\0' || strlen(argv[1]) >= GUEST_NAME_MAX) {
                log_error("the guest name is empty or longer than %u bytes", GUEST_NAME_MAX - 1);
                return hook_op_fails_start(op) ? 1 : 0;
        }

        r = run(op, argv[1], xml, xml_len, &ctx);
        if (r < 0) {
                if (hook_op_fails_start(op)) {
                        log_error("%s", error_get(r));
                        return 1;
                }
                log_warning("%s", error_get(r));
        }
        log_close();
        return 0;
}
