/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every backend of vGPU-carrying VFs does alike (backend-vf.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend-vf.h"
#include "error.h"
#include "log.h"
#include "vgpu.h"

bool vf_key_is_mine(const char *key) {
        return ledger_key_is_vf(key);
}

int vf_parent_offer(const VfioKind *k, int rootfd, const char *parent, const char *type, BackendOffer *ret,
                    bool *ret_offered) {
        VfioOffer o;
        int r;

        r = vfio_pf_offer(k, rootfd, parent, type, &o, ret_offered);
        if (r < 0)
                return r;
        *ret = (BackendOffer) { .existing = o.existing, .available = o.creatable };
        return 0;
}

/* A PF's offers as types (`mdev-hooks types`). */
int vf_parent_types(const VfioKind *k, int rootfd, const char *pf, SysfsType **ret, size_t *ret_n) {
        _cleanup_free_ VfioOffer *l = NULL;
        _cleanup_strv_free_ char **vfs = NULL;
        SysfsType *types;
        unsigned nvfs = 0, nfree = 0;
        size_t n = 0;
        int r;

        r = vfio_pf_offers(k, rootfd, pf, &l, &n, &nvfs, &nfree);
        if (r < 0)
                return r;
        if (vfio_pf_vfs(rootfd, pf, &vfs) < 0)
                error_clear();
        types = calloc(n + 1, sizeof *types);
        if (!types)
                return -ENOMEM;
        *ret = types;
        *ret_n = 0;
        for (size_t i = 0; i < n; i++) {
                SysfsType *t = &types[(*ret_n)++];

                t->id = strdup(l[i].type.type);
                t->name = l[i].type.name[0] ? strdup(l[i].type.name) : NULL;
                t->device_api = strdup("vfio-pci");
                t->description = strdup_printf("%s: %u on VFs, %u of %u VFs free (VFs %s..%s)", k->label,
                                               l[i].existing, nfree, nvfs, vfs && vfs[0] ? vfs[0] : "-",
                                               vfs && vfs[0] ? vfs[strv_length(vfs) - 1] : "-");
                t->available = l[i].creatable;
                if (!t->id || !t->device_api || !t->description)
                        return -ENOMEM;
        }
        return 0;
}

int vf_device_get(const VfioKind *k, int rootfd, const char *key, SysfsMdev *ret) {
        SysfsMdev m = { .uuid = "" };
        unsigned cur;
        int r;

        r = vfio_vf_current(k, rootfd, key, &cur);
        if (r < 0)
                return r;
        if (cur == 0)
                return -ENOENT;
        if (vfio_vf_pf(rootfd, key, m.parent) < 0)
                error_clear(); /* a VF without its physfn link: its parent unknown */
        snprintf(m.uuid, sizeof m.uuid, "%s", key);
        snprintf(m.type, sizeof m.type, "%s%u", k->prefix, cur);
        *ret = m;
        return 0;
}

bool vf_type_is_mine(const VfioKind *k, const char *type) {
        unsigned id;

        return vfio_kind_type_id(k, type, &id) >= 0;
}

int vf_pick(const VfioKind *k, int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type,
            SysfsMdev *ret) {
        char *types[2] = { (char *) type, NULL };
        VgpuChoice ch;
        int r;

        r = vgpu_choose(k, rootfd, ledgerfd, c, boot_id, NULL, types, NULL, NULL, 0, &ch);
        if (r < 0)
                return r;
        *ret = (SysfsMdev) { .uuid = "" };
        snprintf(ret->uuid, sizeof ret->uuid, "%s", ch.vf);
        snprintf(ret->parent, sizeof ret->parent, "%s", ch.pf);
        snprintf(ret->type, sizeof ret->type, "%s", ch.type);
        return 0;
}

bool vf_dom_has(const Domxml *d) {
        return vgpu_dom_may_have(d);
}

/* --- the hook's transaction: vgpu.c's plan ----------------------------------- */

typedef struct VfTxn {
        HookContext *ctx;
        HookOp op;
        VgpuPlan plan;
} VfTxn;

int vf_txn_new(const VfioKind *k, HookContext *ctx, HookOp op, void **ret) {
        VfTxn *t = calloc(1, sizeof *t);

        if (!t)
                return -ENOMEM;
        t->ctx = ctx;
        t->op = op;
        t->plan.kind = k;
        *ret = t;
        return 0;
}

int vf_txn_check(void *p) {
        VfTxn *t = p;

        if (t->op != HOOK_OP_PREPARE)
                return 0; /* migrate: vgpu_migrate() reads and chooses at once */
        return vgpu_prepare_check(t->ctx, &t->plan, LEDGER_ASSIGNED);
}

int vf_txn_apply(void *p) {
        VfTxn *t = p;

        /* each undoes its own on failure */
        if (t->op != HOOK_OP_PREPARE)
                return vgpu_migrate(t->ctx, &t->plan);
        return vgpu_prepare_apply(t->ctx, &t->plan, LEDGER_ASSIGNED);
}

int vf_txn_rollback(void *p) {
        VfTxn *t = p;

        return vgpu_rollback(t->ctx, &t->plan);
}

void vf_txn_commit(void *p) {
        (void) p; /* the records are written: nothing is left to forget */
}

void vf_txn_free(void *p) {
        VfTxn *t = p;

        vgpu_plan_done(&t->plan);
        free(t);
}

int vf_reconnect(const VfioKind *k, HookContext *ctx) {
        int r = vgpu_reconnect(k, ctx);

        if (r < 0)
                log_warning("cannot re-assert the guest's vGPUs: %s", error_get(r));
        return r;
}
