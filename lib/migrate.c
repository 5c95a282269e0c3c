/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * migrate begin / restore begin (doc/design.md §1): libvirt runs the
 * destination's hook with the incoming domain XML on stdin, and whatever the
 * hook prints replaces it. Each backend (backend.h) finds or makes here a
 * device of the same type for each of the guest's devices of its kind,
 * claims it as `incoming` (the `prepare` that follows makes it `assigned`),
 * and rewrites the XML only where the local name (the mdev's UUID, the VF's
 * address) differs: the mdev's in backend-mdev-migrate.c, the NVIDIA VF's
 * in vgpu-place.c.
 *
 * Every backend checks first, without changing anything, so that a type
 * this host does not enable refuses the migration before any create. All
 * or nothing: one failure rolls back every backend's claims and creations,
 * in reverse order, and the XML is left as it came. Records are written
 * without the fsync of the directory (alloc.c says why); it is fsynced once
 * here, before the commit and before the worker lets the lock go. libvirt
 * runs `release` for the guest on the destination when the incoming
 * migration fails, which frees the incoming claims like any other.
 */
#include "backend.h"
#include "error.h"
#include "hook.h"
#include "ledger.h"
#include "log.h"

int migrate_run(HookContext *ctx, HookOp op) {
        BackendRun run = { { NULL } };
        bool written = false;
        int r;

        if (op != HOOK_OP_MIGRATE && op != HOOK_OP_RESTORE)
                return -EINVAL;
        if (!backend_dom_has_any(ctx->dom))
                return 0;

        r = backend_run_check(&run, ctx, op);
        if (r < 0)
                goto out;
        written = true;
        r = backend_run_apply(&run);
        /* Durable before the commit: a sync that fails rolls it back too. */
        if (r >= 0)
                r = ledger_sync(ctx->ledgerfd);
        if (r < 0) {
                ErrorSaved why; /* the rollback may set messages of its own */

                error_save(&why);
                ctx->rewritten = false;
                backend_run_rollback(&run);
                r = error_restore(r, &why);
                goto out;
        }
        written = false;
        backend_run_commit(&run);
out:
        backend_run_done(&run);
        if (written) {
                /* What the rollback wrote. */
                int k = ledger_sync(ctx->ledgerfd);
                if (k < 0)
                        log_warning("%s", error_get(k));
        }
        return r;
}
