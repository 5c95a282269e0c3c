/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every backend of vGPU-carrying VFs does alike (backend-vf.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend-vf.h"
#include "error.h"
#include "log.h"
#include "pciaddr.h"
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

int vf_pick(const VfioKind *k, int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type, NodeSet wish,
            SysfsMdev *ret) {
        char *types[2] = { (char *) type, NULL };
        VgpuChoice ch;
        int r;

        r = vgpu_choose(k, rootfd, ledgerfd, c, boot_id, NULL, wish, types, NULL, NULL, 0, &ch);
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

/* --- attach ------------------------------------------------------------------ */

/* Whether every type asked for is one of k's names (as the hook reads the
 * entry attach writes: its type, or its class's types) and the host has
 * PFs of k. */
bool vf_attach_serves(const VfioKind *k, const AttachChoosing *ch) {
        _cleanup_strv_free_ char **types = NULL, **pfs = NULL;
        DomxmlVgpu want = { 0 };
        bool serves = true;

        snprintf(want.type, sizeof want.type, "%s", strempty(ch->req->type));
        snprintf(want.mdev_class, sizeof want.mdev_class, "%s", strempty(ch->req->mdev_class));
        if (vgpu_want_types(k, ch->config, &want, NULL, 0, &types) < 0 || !types[0])
                serves = false;
        for (char **t = types; serves && *t; t++)
                serves = vf_type_is_mine(k, *t);
        if (serves)
                serves = vfio_pf_list(k, ch->rootfd, &pfs) >= 0 && strv_length(pfs) > 0;
        error_clear();
        return serves;
}

/* The VFs --parent allows: itself when it names a VF, its VFs when it names
 * a PF. */
static int parent_vfs(const VfioKind *k, int rootfd, const char *parent, char ***ret) {
        char pci[PCI_ADDRESS_STRING_MAX];

        if (!pci_address_normalize(parent, pci))
                return error_set(-EINVAL, "--parent '%s' is not a PCI address; for a vGPU of the %s name its GPU (PF) or a VF",
                                 parent, k->label);
        if (vfio_is_vf(k, rootfd, pci) > 0)
                return strv_extend(ret, pci);
        if (vfio_is_pf(k, rootfd, pci) > 0)
                return vfio_pf_vfs(rootfd, pci, ret);
        error_clear();
        return error_set(-ENODEV, "--parent %s is neither a GPU (PF) nor a VF of the %s here", pci, k->label);
}

void vf_taken_add(VfTaken *t, const char *pci) {
        snprintf(t->vf[t->n++], PCI_ADDRESS_STRING_MAX, "%.12s", pci);
}

static bool taken_has(const VfTaken *t, const char *pci) {
        for (size_t i = 0; i < t->n; i++)
                if (streq(t->vf[i], pci))
                        return true;
        return false;
}

int vf_taken_init(const AttachChoosing *ch, VfTaken *t) {
        const Domxml *def = ch->def, *live = ch->live;
        size_t room = (def ? def->n_vgpus : 0) + (live ? live->n_vgpus : 0) + strv_length(ch->req->avoid) +
                      ch->req->count + 1;

        t->n = 0;
        t->vf = calloc(room, sizeof *t->vf);
        if (!t->vf)
                return -ENOMEM;
        for (size_t i = 0; def && i < def->n_vgpus; i++)
                vf_taken_add(t, def->vgpus[i].pci);
        for (size_t i = 0; live && i < live->n_vgpus; i++)
                vf_taken_add(t, live->vgpus[i].pci);
        for (char **v = ch->req->avoid; v && *v; v++)
                vf_taken_add(t, *v);
        return 0;
}

/* The first VF of those --parent allows that can take one of types. */
static int choose_on_parent(const VfioKind *k, const AttachChoosing *ch, char **types, char **allowed,
                            const VfTaken *t, VgpuChoice *ret) {
        int r = -ENOSPC;

        for (char **vf = allowed; *vf && r < 0; vf++) {
                if (taken_has(t, *vf))
                        continue;
                /* no wish: --parent chose the GPU */
                r = vgpu_choose(k, ch->rootfd, ch->ledgerfd, ch->config, ch->boot_id, NULL, 0, types, *vf, t->vf, t->n, ret);
                if (r >= 0 && !streq(ret->vf, *vf))
                        r = -ENOSPC;
        }
        return r;
}

int vf_attach_choose(const VfioKind *k, const AttachChoosing *ch, AttachDevice *out) {
        const AttachRequest *req = ch->req;
        _cleanup_strv_free_ char **types = NULL, **allowed = NULL;
        _cleanup_free_ char (*taken)[PCI_ADDRESS_STRING_MAX] = NULL;
        DomxmlVgpu want = { 0 };
        VfTaken t;
        int r;

        snprintf(want.type, sizeof want.type, "%s", strempty(req->type));
        snprintf(want.mdev_class, sizeof want.mdev_class, "%s", strempty(req->mdev_class));
        error_clear();
        r = vgpu_want_types(k, ch->config, &want, NULL, 0, &types);
        if (r < 0)
                return r;
        if (req->parent) {
                r = parent_vfs(k, ch->rootfd, req->parent, &allowed);
                if (r < 0)
                        return r;
        }
        r = vf_taken_init(ch, &t);
        if (r < 0)
                return r;
        taken = t.vf; /* freed on every way out */

        for (unsigned i = 0; i < req->count; i++) {
                VgpuChoice c = { 0 };

                error_clear();
                if (!allowed)
                        r = vgpu_choose(k, ch->rootfd, ch->ledgerfd, ch->config, ch->boot_id, NULL, attach_wish(ch), types,
                                        NULL, t.vf, t.n, &c);
                else if (choose_on_parent(k, ch, types, allowed, &t, &c) < 0) {
                        error_clear();
                        return error_set(-ENOSPC, "no capacity for %s on %s: no free VF there can take it%s (see mdev-hooks list)",
                                         req->type ? req->type : req->mdev_class, req->parent,
                                         i > 0 ? " after the ones chosen" : "");
                }
                if (r < 0)
                        return r;
                attach_device_fill(&out[i], ATTACH_VGPU, c.vf, req, c.type);
                vf_taken_add(&t, c.vf);
        }
        return 0;
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
