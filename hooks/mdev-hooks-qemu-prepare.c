/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-qemu-prepare.so: `prepare begin` without libxml2. The front end
 * (mdev-hooks-qemu.c) loads it instead of mdev-hooks-qemu-worker.so when its
 * strict reader (lib/domlite.h) read the domain XML; when that reader
 * declines, or for any other operation, the worker runs as before.
 *
 * Loading libxml2 and what it needs was some 40% of the CPU time and 70 of
 * the 250 system calls of a prepare of one mdev. This module links the same
 * library as the worker, but only what prepare uses of it: domxml.c (the
 * only user of libxml2) and migrate.c are never linked in, and the module
 * does not link libxml2 (hooks/meson.build checks that at link time).
 *
 * From here on a prepare is the worker's, step for step: the guest name
 * checked, nothing to do when the XML holds no mdev, then the config, the
 * record and the lock (worker-setup.h), and hook_prepare().
 *
 * migrate begin and restore begin come here too (mdev_hooks_qemu_migrate()),
 * through migrate_run_lite(): when every hostdev is certain to keep its
 * UUID, migrate prints nothing and needs no document to rewrite. When one
 * may get another UUID, it hands the call back to the front end, having
 * changed nothing and said nothing, and the worker does it all again.
 */
#include <stdio.h>
#include <stdlib.h>

#include "domlite.h"
#include "hook.h"
#include "log.h"
#include "util.h"
#include "vgpu.h"
#include "worker.h"
#include "worker-setup.h"

static int run(const char *guest, Domxml *dom) {
        _cleanup_(setup_done) Setup su = SETUP_INIT;
        HookContext ctx;
        int r;

        if (dom->n_mdevs == 0 && !vgpu_dom_may_have(dom))
                return 0; /* the front's scan over-reported */
        r = setup(HOOK_OP_PREPARE, guest, &su);
        if (r < 0)
                return r;
        ctx = setup_context(&su, dom, guest);
        r = hook_prepare(&ctx); /* takes ctx.probed over: NULL here */
        free(ctx.probed);
        return r;
}

/* migrate begin / restore begin of a domain the front end read: 1 when
 * the call needs the worker (libxml2's document), with nothing changed. */
static int run_migrate(HookOp op, const char *guest, Domxml *dom) {
        _cleanup_(setup_done) Setup su = SETUP_INIT;
        HookContext ctx;
        int r;

        if (dom->n_mdevs == 0 && !vgpu_dom_may_have(dom))
                return 0; /* the front's scan over-reported */
        if (dom->n_vgpus > 0)
                return 1; /* vgpu_migrate() may rewrite them */
        r = setup(op, guest, &su);
        if (r < 0)
                return r;
        ctx = setup_context(&su, dom, guest);
        return migrate_run_lite(&ctx, op);
}

int mdev_hooks_qemu_migrate(int argc, char **argv, Domxml *dom_in) {
        _cleanup_domlite_free_ Domxml *dom = dom_in;
        HookOp op;
        int r;

        if (argc < 3)
                return HOOK_MODULE_FALLBACK; /* the worker says how to call it */
        op = hook_op_from_string(argv[2]);
        if (op != HOOK_OP_MIGRATE && op != HOOK_OP_RESTORE)
                return HOOK_MODULE_FALLBACK;
        log_open("mdev-hooks-qemu", LOG_TARGET_STDERR | LOG_TARGET_SYSLOG);
        log_set_subject(argv[1]);
        if (argv[1][0] == '\0' || strlen(argv[1]) >= GUEST_NAME_MAX) {
                log_error("the guest name is empty or longer than %u bytes", GUEST_NAME_MAX - 1);
                return 1;
        }
        /* What the config's warnings say, the worker says again if it
         * takes the call over: held until it is certain it does not. */
        log_hold();
        r = run_migrate(op, argv[1], dom);
        if (r == 1) {
                log_discard();
                log_close();
                return HOOK_MODULE_FALLBACK;
        }
        log_release();
        if (r < 0) {
                log_error("%s", error_get(r));
                return 1;
        }
        log_close();
        return 0;
}

int mdev_hooks_qemu_prepare(int argc, char **argv, Domxml *dom_in) {
        _cleanup_domlite_free_ Domxml *dom = dom_in;
        int r;

        if (argc < 3) {
                fprintf(stderr, "usage: %s <guest> prepare <sub-operation> <extra>\n", program_invocation_short_name);
                return 2;
        }
        log_open("mdev-hooks-qemu", LOG_TARGET_STDERR | LOG_TARGET_SYSLOG);
        log_set_subject(argv[1]);
        if (argv[1][0] == '\0' || strlen(argv[1]) >= GUEST_NAME_MAX) {
                log_error("the guest name is empty or longer than %u bytes", GUEST_NAME_MAX - 1);
                return 1;
        }
        r = run(argv[1], dom);
        if (r < 0) {
                log_error("%s", error_get(r));
                return 1;
        }
        log_close();
        return 0;
}
