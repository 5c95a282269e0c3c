/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `prepare begin`, `release end` and `reconnect begin` without libxml2, run
 * by the front end itself (mdev-hooks-qemu.c) when its strict reader
 * (lib/domlite.h) read the domain XML; when that reader declines, or for
 * any other operation, the worker runs (worker.h).
 *
 * Loading libxml2 and what it needs was some 40% of the CPU time and 70 of
 * the 250 system calls of a prepare of one mdev, and loading a module of its
 * own, with libinih, another 25 system calls; a release paid the same. So
 * this is linked into the front end with the same library as the worker,
 * but only what these operations use of it: domxml.c (the only user of
 * libxml2) and migrate-xml.c are never linked in, and inih is linked
 * statically (hooks/meson.build), as glibc is where it can be.
 * (migrate-lite.c does the same for migrate and restore.)
 *
 * From here on the call is the worker's, step for step: the guest name
 * checked, nothing to do when the XML holds no mdev (except on release,
 * which goes by the record), then the config, the record and the lock
 * (worker-setup.h), and the operation; a failure fails the guest's start
 * only for prepare, and is a warning for release and reconnect.
 */
#include <stdio.h>
#include <stdlib.h>

#include "domlite.h"
#include "hook.h"
#include "lite.h"
#include "util.h"
#include "vgpu.h"
#include "worker-setup.h"

static int run(HookOp op, const char *guest, Domxml *dom) {
        _cleanup_(setup_done) Setup su = SETUP_INIT;
        HookContext ctx;
        int r;

        if (dom->n_mdevs == 0 && !vgpu_dom_may_have(dom) && op != HOOK_OP_RELEASE)
                return 0; /* the front's scan over-reported */
        r = setup(op, guest, dom, &su);
        if (r < 0)
                return r;
        ctx = setup_context(&su, dom, guest);
        switch (op) {
        case HOOK_OP_PREPARE:
                r = hook_prepare(&ctx); /* takes ctx.probed over: NULL here */
                free(ctx.probed);
                return r;
        case HOOK_OP_RELEASE:
                return hook_release(&ctx);
        case HOOK_OP_RECONNECT:
                return hook_reconnect(&ctx);
        default:
                return 0; /* op_lite() is not called for these */
        }
}

int op_lite(HookOp op, int argc, char **argv, Domxml *dom_in) {
        _cleanup_domlite_free_ Domxml *dom = dom_in;
        int r;

        if (argc < 3) {
                fprintf(stderr, "usage: %s <guest> <operation> <sub-operation> <extra>\n", program_invocation_short_name);
                return 2;
        }
        r = op_begin(op, argv[1]);
        if (r >= 0)
                return r;
        return op_end(op, run(op, argv[1], dom));
}
