/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backend of AMD MxGPU on the open-source GIM driver (backend.h,
 * amdgim.h): a device is a VF of a PF bound to gim, whole, of the type its
 * GPU's partition gives (amd-mxgpu-<N>), its record keyed by the VF's
 * address. A guest names it as a <hostdev type='pci' managed='yes'> (libvirt
 * binds it to vfio-pci) with an <mh:vgpu pci= type=> entry: the entry is
 * what makes the hook look (a guest without one is left alone, as any
 * guest with ordinary PCI devices is; libvirt still refuses a VF another
 * running guest has).
 *
 *   prepare   the VF must carry the type asked for (the partition's: never
 *             changed here) and no other guest may hold it (owner.c); the
 *             record says the guest borrows it (vgpu.c's plan, nothing
 *             programmed)
 *   release   forgets the record: nothing was set on the device
 *   pick      a VF nobody holds, on a GPU whose partition gives the type,
 *             ordered by the placement engine (place.h)
 *   migrate, restore
 *             refused in one line: a GIM VF has no migration driver, and
 *             QEMU cannot move a vfio-pci device's state
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amdgim.h"
#include "backend-vf.h"
#include "owner.h"
#include "place.h"
#include "vgpu.h"

static int amd_forget(int rootfd, const char *vf, unsigned timeout_msec) {
        (void) rootfd, (void) vf, (void) timeout_msec;
        return 0; /* nothing of mdev-hooks' is on the VF */
}

static const HookReleaseKind amd_release = {
        .noun = "AMD VF", .kept = "free", .verb = "forget", .verb_noun = "forgetting",
        .done = "forgotten", .crashpoint = "release-after-clear", .remove = amd_forget,
};

static int amd_parent_list(int rootfd, char ***ret) {
        return vfio_pf_list(&vfio_amdgim, rootfd, ret);
}

static int amd_parent_is(int rootfd, const char *name) {
        return vfio_is_pf(&vfio_amdgim, rootfd, name);
}

static bool amd_type_is_mine(const char *type) {
        return vf_type_is_mine(&vfio_amdgim, type);
}

/* The PF's VFs that are bound to vfio-pci now (a guest's), and all. */
static int pf_vfs_bound(int rootfd, const char *pf, unsigned *ret_bound, unsigned *ret_all) {
        _cleanup_strv_free_ char **vfs = NULL;
        int r;

        *ret_bound = *ret_all = 0;
        r = vfio_pf_vfs(rootfd, pf, &vfs);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        for (char **vf = vfs; *vf; vf++) {
                (*ret_all)++;
                if (amdgim_vf_bound(rootfd, *vf) > 0)
                        (*ret_bound)++;
        }
        return 0;
}

/* The partition's type is offered: existing, the VFs bound to vfio-pci
 * (the host's view; the records say which guest), available the rest. */
static int amd_parent_offer(int rootfd, const char *parent, const char *type, BackendOffer *ret, bool *ret_offered) {
        AmdgimPartition p;
        unsigned id, bound, all;
        int r;

        *ret = (BackendOffer) { 0 };
        *ret_offered = false;
        if (vfio_kind_type_id(&vfio_amdgim, type, &id) < 0)
                return 0;
        r = amdgim_pf_partition(rootfd, parent, &p);
        if (r < 0)
                return r;
        if (p.nvfs != id)
                return 0;
        r = pf_vfs_bound(rootfd, parent, &bound, &all);
        if (r < 0)
                return r;
        *ret = (BackendOffer) { .existing = bound, .available = all - bound };
        *ret_offered = true;
        return 0;
}

static int amd_parent_types(int rootfd, const char *parent, SysfsType **ret, size_t *ret_n) {
        _cleanup_free_ SysfsType *t = NULL;
        _cleanup_strv_free_ char **vfs = NULL;
        AmdgimPartition p;
        char what[96];
        unsigned bound, all;
        int r;

        r = amdgim_pf_partition(rootfd, parent, &p);
        if (r >= 0)
                r = pf_vfs_bound(rootfd, parent, &bound, &all);
        if (r < 0)
                return r;
        if (vfio_pf_vfs(rootfd, parent, &vfs) < 0 || all == 0) {
                error_clear();
                *ret = calloc(1, sizeof **ret);
                *ret_n = 0;
                return *ret ? 0 : -ENOMEM;
        }
        t = calloc(2, sizeof *t);
        if (!t)
                return -ENOMEM;
        amdgim_describe(&p, what, sizeof what);
        t->id = strdup_printf("%s%u", AMDGIM_TYPE_PREFIX, p.nvfs);
        t->name = strdup_printf("AMD %s %s", p.model, p.spatial[0] ? p.spatial : "?");
        t->device_api = strdup("vfio-pci");
        t->description = strdup_printf("%s: %s; %u of %u VFs free (VFs %s..%s)", vfio_amdgim.label, what,
                                       all - bound, all, vfs[0], vfs[strv_length(vfs) - 1]);
        t->available = all - bound;
        if (!t->id || !t->name || !t->device_api || !t->description) {
                sysfs_type_done(t);
                return -ENOMEM;
        }
        *ret = steal_pointer(&t);
        *ret_n = 1;
        return 0;
}

/* check-config: a GPU of GIM's named under a type gives that type only if
 * its partition does; mdev-hooks never changes a partition. */
static int amd_parent_check(int rootfd, const char *parent, const char *type, char **ret_problem) {
        AmdgimPartition p;
        unsigned id;
        int r;

        *ret_problem = NULL;
        if (amdgim_is_pf(rootfd, parent) <= 0)
                return 0;
        r = amdgim_pf_partition(rootfd, parent, &p);
        if (r < 0)
                return r;
        if (vfio_kind_type_id(&vfio_amdgim, type, &id) >= 0 && id == p.nvfs && p.nvfs > 0)
                return 1;
        if (p.nvfs == 0)
                *ret_problem = strdup_printf("is an AMD GPU on gim without VFs: set its partition (amd-smi, /etc/gim_config) and reload gim");
        else
                *ret_problem = strdup_printf("is an AMD GPU partitioned %s into %u VFs, whose type is %s%u, not %s: name that type, or change the partition with amd-smi (mdev-hooks never does)",
                                             p.spatial[0] ? p.spatial : "?", p.nvfs, AMDGIM_TYPE_PREFIX, p.nvfs, type);
        return *ret_problem ? 1 : -ENOMEM;
}

static int amd_device_append(int rootfd, SysfsMdev **l, size_t *n) {
        return vfio_vgpus_append(&vfio_amdgim, rootfd, l, n);
}

static int amd_device_get(int rootfd, const char *key, SysfsMdev *ret) {
        return vf_device_get(&vfio_amdgim, rootfd, key, ret);
}

static int amd_device_is(int rootfd, const char *name) {
        return amdgim_is_vf(rootfd, name);
}

/* --- pick: a VF nobody holds, placed as every backend's are ---------------- */

typedef struct AmdCandidate {
        char pf[PCI_ADDRESS_STRING_MAX];
        char vf[PCI_ADDRESS_STRING_MAX]; /* its first VF nobody holds */
        unsigned room;                   /* VFs nobody holds */
} AmdCandidate;

/* The VFs of pf that no guest holds (owner.h, OWNER_OFFERED): how many,
 * and the first. */
static int pf_room(int rootfd, int ledgerfd, const char *boot_id, const char *pf, AmdCandidate *ret) {
        _cleanup_strv_free_ char **vfs = NULL;
        int r;

        *ret = (AmdCandidate) { .room = 0 };
        snprintf(ret->pf, sizeof ret->pf, "%.12s", pf);
        if (vfio_pf_vfs(rootfd, pf, &vfs) < 0) {
                error_clear();
                return 0;
        }
        for (char **vf = vfs; *vf; vf++) {
                OwnerState s;

                r = owner_read(ledgerfd, *vf, boot_id, NULL, &s, NULL);
                if (r < 0)
                        return r;
                if (!owner_may_give(s, OWNER_OFFERED))
                        continue;
                if (ret->room++ == 0)
                        snprintf(ret->vf, sizeof ret->vf, "%.12s", *vf);
        }
        return 0;
}

static int candidate_cmp(const void *x, const void *y, void *userdata) {
        const AmdCandidate *a = x, *b = y;
        PlaceKey ka = { .parent = a->pf, .room = a->room }, kb = { .parent = b->pf, .room = b->room };

        return place_cmp(&ka, &kb, *(const ConfigPlacement *) userdata);
}

/* Whether the config lets type be placed on pf: its device_addresses when
 * it names some, else any GPU that no other type names. */
static bool type_allows(const Config *c, const char *type, const char *pf) {
        const ConfigType *t = config_find_type(c, type);

        if (t && t->addresses && t->addresses[0])
                return strv_contains(t->addresses, pf);
        return !config_parent_is_listed(c, pf);
}

static int amd_pick(int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type, SysfsMdev *ret) {
        _cleanup_strv_free_ char **pfs = NULL;
        _cleanup_free_ AmdCandidate *l = NULL;
        size_t n = 0;
        unsigned id;
        int r;

        if (vfio_kind_type_id(&vfio_amdgim, type, &id) < 0)
                return error_set(-EINVAL, "'%s' is not a type of AMD MxGPU (%s<N>, N the VFs of a GPU)", type, AMDGIM_TYPE_PREFIX);
        r = vfio_pf_list(&vfio_amdgim, rootfd, &pfs);
        if (r < 0)
                return r;
        l = calloc(strv_length(pfs) + 1, sizeof *l);
        if (!l)
                return -ENOMEM;
        for (char **pf = pfs; *pf; pf++) {
                AmdgimPartition p;

                if (!type_allows(c, type, *pf) || amdgim_pf_partition(rootfd, *pf, &p) < 0 || p.nvfs != id) {
                        error_clear();
                        continue;
                }
                r = pf_room(rootfd, ledgerfd, boot_id, *pf, &l[n]);
                if (r < 0)
                        return r;
                if (l[n].room > 0)
                        n++;
        }
        if (n == 0)
                return error_set(-ENOSPC, "no free VF of type %s: no AMD GPU here is partitioned into %u VFs with one that no guest holds (see mdev-hooks list)",
                                 type, id);
        qsort_r(l, n, sizeof *l, candidate_cmp, (void *) &c->placement);
        *ret = (SysfsMdev) { .uuid = "" };
        snprintf(ret->uuid, sizeof ret->uuid, "%s", l[0].vf);
        snprintf(ret->parent, sizeof ret->parent, "%s", l[0].pf);
        snprintf(ret->type, sizeof ret->type, "%s", type);
        return 0;
}

/* --- the guest ------------------------------------------------------------ */

/* The first of the domain's hostdevs that is a GIM VF here, or that its
 * metadata gives a type of GIM's; NULL when none. */
static const DomxmlVgpu *dom_first_amd(const HookContext *ctx) {
        for (size_t i = 0; i < ctx->dom->n_vgpus; i++) {
                const DomxmlVgpu *v = &ctx->dom->vgpus[i];

                if (amd_type_is_mine(v->type) || amdgim_is_vf(ctx->rootfd, v->pci) > 0)
                        return v;
        }
        return NULL;
}

/* A VF whose entry asks for a type its GPU's partition does not give. */
static int check_types(const HookContext *ctx) {
        for (size_t i = 0; i < ctx->dom->n_vgpus; i++) {
                const DomxmlVgpu *v = &ctx->dom->vgpus[i];
                unsigned cur, want;

                if (!v->type[0] || amdgim_is_vf(ctx->rootfd, v->pci) <= 0)
                        continue;
                if (amdgim_vf_current(ctx->rootfd, v->pci, &cur) < 0)
                        return -EIO;
                if (!amd_type_is_mine(v->type))
                        return error_set(-EMEDIUMTYPE, "VF %s is an AMD MxGPU VF (%s%u), but the domain asks for %s; fix the domain's metadata",
                                         v->pci, AMDGIM_TYPE_PREFIX, cur, v->type);
                if (vfio_kind_type_id(&vfio_amdgim, v->type, &want) >= 0 && want != cur)
                        return error_set(-EMEDIUMTYPE, "VF %s is %s%u (its GPU is split into %u VFs), but the domain asks for %s; give it a VF of a GPU partitioned so (mdev-hooks pick %s) or fix the metadata (mdev-hooks never changes a partition)",
                                         v->pci, AMDGIM_TYPE_PREFIX, cur, cur, v->type, v->type);
        }
        return 0;
}

typedef struct AmdTxn {
        HookContext *ctx;
        HookOp op;
        void *vf; /* backend-vf.c's, for prepare */
} AmdTxn;

static int amd_txn_new(HookContext *ctx, HookOp op, void **ret) {
        AmdTxn *t = calloc(1, sizeof *t);
        int r;

        if (!t)
                return -ENOMEM;
        t->ctx = ctx;
        t->op = op;
        r = vf_txn_new(&vfio_amdgim, ctx, op, &t->vf);
        if (r < 0) {
                free(t);
                return r;
        }
        *ret = t;
        return 0;
}

static int amd_txn_check(void *p) {
        AmdTxn *t = p;
        const DomxmlVgpu *v;
        int r;

        if (t->op != HOOK_OP_PREPARE) {
                v = dom_first_amd(t->ctx);
                if (!v)
                        return 0;
                return error_set(-EOPNOTSUPP, "guest '%s' holds AMD MxGPU VF %s, which cannot migrate or be restored (GIM's VFs have no migration driver): shut it down and start it where it should run",
                                 t->ctx->guest, v->pci);
        }
        r = check_types(t->ctx);
        if (r < 0)
                return r;
        return vf_txn_check(t->vf);
}

static int amd_txn_apply(void *p) {
        AmdTxn *t = p;

        return t->op == HOOK_OP_PREPARE ? vf_txn_apply(t->vf) : 0;
}

static int amd_txn_rollback(void *p) {
        AmdTxn *t = p;

        return t->op == HOOK_OP_PREPARE ? vf_txn_rollback(t->vf) : 0;
}

static void amd_txn_commit(void *p) {
        (void) p; /* the records are written */
}

static void amd_txn_free(void *p) {
        AmdTxn *t = p;

        vf_txn_free(t->vf);
        free(t);
}

static int amd_reconnect(HookContext *ctx) {
        return vf_reconnect(&vfio_amdgim, ctx);
}

static int amd_release_one(HookContext *ctx, LedgerEntry *e, unsigned timeout_msec) {
        return vgpu_kind_release_one(&vfio_amdgim, &amd_release, ctx, e, timeout_msec);
}

/* attach: not yet (it writes managed='no' hostdevs of vGPUs). */
static bool amd_attach_serves(const AttachChoosing *ch) {
        (void) ch;
        return false;
}

static int amd_attach_choose(const AttachChoosing *ch, AttachDevice *out) {
        (void) ch, (void) out;
        return error_set(-EOPNOTSUPP, "mdev-hooks attach does not give AMD MxGPU VFs yet: add a <hostdev type='pci' managed='yes'> of a VF that mdev-hooks pick names");
}

const Backend backend_amd = {
        .name = "amd-gim",
        .noun = "AMD VF",
        .key_is_mine = vf_key_is_mine,
        .parent_list = amd_parent_list,
        .parent_is = amd_parent_is,
        .parent_offer = amd_parent_offer,
        .parent_types = amd_parent_types,
        .parent_check = amd_parent_check,
        .device_append = amd_device_append,
        .device_get = amd_device_get,
        .device_is = amd_device_is,
        .release = &amd_release,
        .eperm_is_busy = false,
        .device_make = NULL,
        .type_is_mine = amd_type_is_mine,
        .pick = amd_pick,
        .dom_has = vf_dom_has,
        .txn_new = amd_txn_new,
        .txn_check = amd_txn_check,
        .txn_apply = amd_txn_apply,
        .txn_rollback = amd_txn_rollback,
        .txn_commit = amd_txn_commit,
        .txn_free = amd_txn_free,
        .reconnect = amd_reconnect,
        .release_one = amd_release_one,
        .attach_serves = amd_attach_serves,
        .attach_choose = amd_attach_choose,
};
