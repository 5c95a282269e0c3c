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
 * said nothing, and the worker does it all again.
 */
#include <pthread.h>
#include <stdatomic.h>
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

/* What run_lite() holds: set up (perhaps before the parse), the parse,
 * and what the second thread read meanwhile. */
typedef struct Lite {
        Setup su;
        int setup_r;               /* setup()'s result when done before the parse */
        ErrorSaved setup_why;
        bool set_up;
        Domxml *dom;
        AllocCandidate *probed;
        size_t n_probed;
} Lite;

static void lite_done(Lite *l) {
        setup_done(&l->su);
        domlite_free(l->dom);
        free(l->probed);
}

/* The worker's order for migrate (mdev-hooks-qemu-worker.c), for an XML of
 * LITE_PREFETCH_MIN_XML or more: the config, the record and the lock come
 * first, and a second thread reads the candidates while domlite reads the
 * XML; a setup failure is reported after the parse, as there. (The worker
 * does so for every migrate: libxml2 takes longer over a small XML than
 * domlite, which is done before the thread would have read much.) 1 when
 * domlite declines (the worker's, then), else 0. */
static int lite_parse(HookOp op, const char *guest, const char *xml, size_t len, Lite *l) {
        Prefetch pf = { .su = &l->su };
        bool prefetching = false;
        pthread_t thread;
        int r;

        atomic_init(&pf.stop, false);
        if (len >= LITE_PREFETCH_MIN_XML) {
                l->set_up = true;
                l->setup_r = setup(op, guest, &l->su);
                if (l->setup_r >= 0)
                        prefetching = pthread_create(&thread, NULL, prefetch_run, &pf) == 0;
                else {
                        error_save(&l->setup_why);
                        error_clear();
                }
        }
        r = domlite_parse(xml, len, &l->dom);
        if (prefetching) {
                atomic_store(&pf.stop, true);
                pthread_join(thread, NULL);
        }
        l->probed = pf.probed;
        l->n_probed = pf.n_probed;
        if (r < 0) {
                error_clear();
                return 1;
        }
        return 0;
}

/* 1 when the call is the worker's, with nothing changed. */
static int run_lite(HookOp op, const char *guest, const char *xml, size_t len) {
        _cleanup_(lite_done) Lite l = { .su = SETUP_INIT };
        HookContext ctx;
        int r;

        if (lite_parse(op, guest, xml, len, &l) > 0)
                return 1;
        if (l.dom->n_mdevs == 0 && !vgpu_dom_may_have(l.dom))
                return 0; /* the front's scan over-reported */
        if (op != HOOK_OP_PREPARE && l.dom->n_vgpus > 0)
                return 1; /* vgpu_migrate() may rewrite them */
        if (l.set_up && l.setup_r < 0)
                return error_restore(l.setup_r, &l.setup_why);
        if (!l.set_up) {
                r = setup(op, guest, &l.su);
                if (r < 0)
                        return r;
        }
        ctx = setup_context(&l.su, l.dom, guest);
        ctx.probed = steal_pointer(&l.probed);
        ctx.n_probed = l.n_probed;
        if (op == HOOK_OP_PREPARE) {
                log_release(); /* no way back to the worker from here */
                r = hook_prepare(&ctx);
        } else
                r = migrate_run_lite(&ctx, op);
        free(ctx.probed); /* when the operation did not take it over */
        return r;
}

int migrate_lite(int argc, char **argv, const char *xml, size_t len) {
        HookOp op;
        int r;

        if (argc < 3)
                return LITE_FALLBACK; /* the worker says how to call it */
        op = hook_op_from_string(argv[2]);
        if (op != HOOK_OP_PREPARE && op != HOOK_OP_MIGRATE && op != HOOK_OP_RESTORE)
                return LITE_FALLBACK;
        log_open("mdev-hooks-qemu", LOG_TARGET_STDERR | LOG_TARGET_SYSLOG);
        log_set_subject(argv[1]);
        if (argv[1][0] == '\0' || strlen(argv[1]) >= GUEST_NAME_MAX) {
                log_error("the guest name is empty or longer than %u bytes", GUEST_NAME_MAX - 1);
                return 1;
        }
        /* What the config's warnings say, the worker says again if it
         * takes the call over: held until it is certain it does not. */
        log_hold();
        r = run_lite(op, argv[1], xml, len);
        if (r == 1) {
                log_discard();
                log_close();
                return LITE_FALLBACK;
        }
        log_release();
        if (r < 0) {
                log_error("%s", error_get(r));
                return 1;
        }
        log_close();
        return 0;
}
