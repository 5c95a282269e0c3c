/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-qemu-worker.so: loaded (dlopen) by the program
 * mdev-hooks-qemu-worker (worker-main.c), which the front end runs in its
 * place for a call it does not run itself (worker.h). Parses the XML the
 * front end read, loads the config, opens the record, takes the host-wide
 * lock and runs the operation.
 *
 * A module that a small program loads, rather than a program that links
 * libxml2: the program loads the ICU stand-in first, which libxml2's
 * libicuuc.so.N then binds to (hooks/no-icu/).
 *
 * Exit status: 0 done (always for release and reconnect, which libvirt
 * ignores or which must never fail); 1 when prepare, migrate or restore
 * failed, with one line on stderr that libvirt shows to the user.
 */
#include <stdio.h>

#include "alloc.h"
#include "config.h"
#include "domxml.h"
#include "hook.h"
#include "ledger.h"
#include "lock.h"
#include "log.h"
#include "vgpu.h"
#include "util.h"
#include "worker.h"
#include "worker-setup.h"

/* migrate and restore, and prepare of a large XML: while libxml2 checks
 * the XML (a migration's can be a few MiB), a second thread reads what
 * placing its mdevs will read, the candidates of every enabled type
 * (alloc_prefetch()), and stops when the check is done. Those reads need the
 * lock, so for these operations the config, the record and the lock come
 * before the parse. For a prepare's smaller XML, checked quickly, the
 * thread's reads of types the guest does not use cost as much as they save
 * (BENCHMARKS.md, "Speed, second round"): its reads are left to the
 * placement. */
#define PREPARE_PREFETCH_MIN_XML (512u << 10)

/* The operation itself, on the context run() set up. */
static int dispatch(HookOp op, HookContext *ctx) {
        int r;

        switch (op) {
        case HOOK_OP_PREPARE:
                r = hook_prepare(ctx); /* takes ctx->probed over */
                free(ctx->probed);
                ctx->probed = NULL;
                return r;
        case HOOK_OP_RELEASE:
                return hook_release(ctx);
        case HOOK_OP_RECONNECT:
                return hook_reconnect(ctx);
        case HOOK_OP_MIGRATE:
        case HOOK_OP_RESTORE:
                r = migrate_run(ctx, op);
                free(ctx->probed); /* when migrate_run() did not take it over */
                ctx->probed = NULL;
                if (r >= 0 && ctx->rewritten)
                        r = domxml_write(ctx->dom, STDOUT_FILENO);
                return r;
        default:
                return 0;
        }
}

/* ahead: what the front end did before its own parse declined (worker.h),
 * else NULL, and the worker does that part itself. */
static int run(HookOp op, const char *guest, const char *xml, size_t xml_len, Ahead *ahead, HookContext *ctx) {
        _cleanup_domxml_free_ Domxml *dom = NULL;
        _cleanup_(ahead_done) Ahead own = AHEAD_INIT;
        Ahead *ah = ahead ? ahead : &own;
        bool early = op == HOOK_OP_MIGRATE || op == HOOK_OP_RESTORE ||
                     (op == HOOK_OP_PREPARE && xml_len >= PREPARE_PREFETCH_MIN_XML);
        int r;

        if (early && !ah->set_up)
                ahead_start(op, guest, ah);
        r = domxml_parse(xml, xml_len, &dom);
        ahead_stop(ah);
        if (r < 0) {
                /* release goes by the record, not by the XML: still free what
                 * the guest holds. Everything else stops here. */
                if (op != HOOK_OP_RELEASE)
                        return r;
                log_warning("%s; releasing by the record alone", error_get(r));
                error_clear();
        } else if (dom->n_mdevs == 0 && !vgpu_dom_may_have(dom) && op != HOOK_OP_RELEASE)
                return 0; /* the front's scan over-reported */
        r = ahead_setup(op, guest, ah);
        if (r < 0)
                return r;

        *ctx = setup_context(&ah->su, dom, guest);
        ctx->probed = steal_pointer(&ah->pf.probed);
        ctx->n_probed = ah->pf.n_probed;

        return dispatch(op, ctx);
}

int mdev_hooks_qemu_worker(int argc, char **argv, const char *xml, size_t xml_len, Ahead *ahead) {
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

        r = op_begin(op, argv[1]);
        if (r >= 0)
                return r;
        return op_end(op, run(op, argv[1], xml, xml_len, ahead, &ctx));
}
