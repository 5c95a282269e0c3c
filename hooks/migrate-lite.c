/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * migrate begin and restore begin without libxml2, run by the front end
 * (mdev-hooks-qemu.c), and a prepare of a large XML (LITE_PREFETCH_MIN_XML
 * or more), for the same order of work. It reads the XML with domlite in
 * the worker's order
 * (the lock first, and the candidates read on a second thread meanwhile,
 * for a large XML), and runs migrate through migrate_run_lite(): when every
 * hostdev is certain to keep its UUID, migrate prints nothing and needs no
 * document to rewrite. When domlite declines, or a hostdev may get another
 * UUID, it hands the call back to the front end, having changed nothing and
 * said nothing but the config's warnings, and the worker goes on from
 * there: with the lock it took and what its thread read (worker.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "domlite.h"
#include "hook.h"
#include "lite.h"
#include "log.h"
#include "util.h"
#include "vgpu.h"
#include "worker-setup.h"

/* The worker's order for migrate (mdev-hooks-qemu-worker.c), for an XML of
 * LITE_PREFETCH_MIN_XML or more: the config, the record and the lock come
 * first, and a second thread reads the candidates while domlite reads the
 * XML (ahead, which the worker goes on with if domlite declines); a setup
 * failure is reported after the parse, as there. (The worker does so for
 * every migrate: libxml2 takes longer over a small XML than domlite, which
 * is done before the thread would have read much.) 1 when the call is the
 * worker's, with nothing changed or said. */
static int run_lite(HookOp op, const char *guest, const char *xml, size_t len, Ahead *ah) {
        _cleanup_(domlite_freep) Domxml *dom = NULL;
        HookContext ctx;
        int r;

        if (len >= LITE_PREFETCH_MIN_XML)
                ahead_start(op, guest, ah);
        r = domlite_parse(xml, len, &dom);
        if (r < 0) {
                error_clear();
                return 1; /* the thread reads on, through libxml2's parse */
        }
        if (dom->n_mdevs == 0 && !vgpu_dom_may_have(dom))
                return 0; /* the front's scan over-reported */
        if (op != HOOK_OP_PREPARE && dom->n_vgpus > 0)
                return 1; /* vgpu_migrate() may rewrite them */
        ahead_stop(ah);
        r = ahead_setup(op, guest, ah);
        if (r < 0)
                return r;
        ctx = setup_context(&ah->su, dom, guest);
        ctx.probed = steal_pointer(&ah->pf.probed);
        ctx.n_probed = ah->pf.n_probed;
        if (op == HOOK_OP_PREPARE) {
                log_release(); /* no way back to the worker from here */
                r = hook_prepare(&ctx);
        } else
                r = migrate_run_lite(&ctx, op);
        /* Not taken over (done, or the worker's, which may use it). */
        ah->pf.probed = ctx.probed;
        ah->pf.n_probed = ctx.n_probed;
        return r;
}

int migrate_lite(int argc, char **argv, const char *xml, size_t len, Ahead *ahead) {
        HookOp op;
        int r;

        if (argc < 3)
                return LITE_FALLBACK; /* the worker says how to call it */
        op = hook_op_from_string(argv[2]);
        if (op != HOOK_OP_PREPARE && op != HOOK_OP_MIGRATE && op != HOOK_OP_RESTORE)
                return LITE_FALLBACK;
        r = op_begin(op, argv[1]);
        if (r >= 0)
                return r;
        /* What the config's warnings say, the worker says again if it
         * takes the call over: held until it is certain it does not. */
        log_hold();
        r = run_lite(op, argv[1], xml, len, ahead);
        if (r == 1) {
                /* What setup() said (the config's warnings) the worker does
                 * not say again when it goes on with it. */
                if (ahead->set_up)
                        log_release();
                else
                        log_discard();
                log_close();
                return LITE_FALLBACK;
        }
        log_release();
        return op_end(op, r);
}
