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
 * What it does with a guest is what every backend of VFs given whole does
 * (backend-whole.h: prepare borrows, release forgets, pick places, migrate
 * and restore are refused); this file adds what is GIM's: its kind
 * (amdgim.h), its types' description and check-config's words on a
 * partition, which mdev-hooks never changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amdgim.h"
#include "backend-vf.h"
#include "backend-whole.h"
#include "vgpu.h"

static const WholeKind amd_whole = {
        .kind = &vfio_amdgim,
        .noun = "AMD MxGPU VF",
        .size = "its GPU's partition",
        .fix = "mdev-hooks never changes a partition",
        .unset = "its GPU has no partition mdev-hooks can read; check its spatial_partition_mode and sriov_numvfs",
        .why_no_migrate = "GIM's VFs have no migration driver",
};

static const HookReleaseKind amd_release = {
        .noun = "AMD VF", .kept = "free", .verb = "forget", .verb_noun = "forgetting",
        .done = "forgotten", .crashpoint = "release-after-clear", .remove = whole_forget,
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

static int amd_parent_offer(int rootfd, const char *parent, const char *type, BackendOffer *ret, bool *ret_offered) {
        return whole_parent_offer(&amd_whole, rootfd, parent, type, ret, ret_offered);
}

static int amd_parent_types(int rootfd, const char *parent, SysfsType **ret, size_t *ret_n) {
        _cleanup_free_ SysfsType *t = NULL;
        _cleanup_strv_free_ char **vfs = NULL;
        AmdgimPartition p;
        BackendOffer o = { 0 };
        bool offered = false;
        char what[96], type[NAME_STRING_MAX];
        unsigned all;
        int r;

        r = amdgim_pf_partition(rootfd, parent, &p);
        if (r < 0)
                return r;
        snprintf(type, sizeof type, "%s%u", AMDGIM_TYPE_PREFIX, p.nvfs);
        r = amd_parent_offer(rootfd, parent, type, &o, &offered);
        if (r < 0)
                return r;
        all = o.existing + o.available;
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
                                       o.available, all, vfs[0], vfs[strv_length(vfs) - 1]);
        t->available = o.available;
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

static int amd_pick(int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type, NodeSet wish,
                    SysfsMdev *ret) {
        return whole_pick(&amd_whole, rootfd, ledgerfd, c, boot_id, type, wish, ret);
}

static int amd_txn_new(HookContext *ctx, HookOp op, void **ret) {
        return whole_txn_new(&amd_whole, ctx, op, ret);
}

static int amd_reconnect(HookContext *ctx) {
        return vf_reconnect(&vfio_amdgim, ctx);
}

static int amd_release_one(HookContext *ctx, LedgerEntry *e, unsigned timeout_msec) {
        return vgpu_kind_release_one(&vfio_amdgim, &amd_release, ctx, e, timeout_msec);
}

static bool amd_attach_serves(const AttachChoosing *ch) {
        return whole_attach_serves(&amd_whole, ch);
}

static int amd_attach_choose(const AttachChoosing *ch, AttachDevice *out) {
        return whole_attach_choose(&amd_whole, ch, out);
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
        .managed = true,
        .dom_has = vf_dom_has,
        .txn_new = amd_txn_new,
        .txn_check = whole_txn_check,
        .txn_apply = whole_txn_apply,
        .txn_rollback = whole_txn_rollback,
        .txn_commit = whole_txn_commit,
        .txn_free = whole_txn_free,
        .reconnect = amd_reconnect,
        .release_one = amd_release_one,
        .attach_serves = amd_attach_serves,
        .attach_choose = amd_attach_choose,
};
