/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backend of NVIDIA's vendor-specific VFIO framework (backend.h, vGPU
 * 17+): a device is a VF of a PF bound to nvidia, carrying a vGPU through
 * <VF>/nvidia/current_vgpu_type (vfio.h, vfio_nvidia). What every such VF
 * backend does alike is backend-vf.c's; this file adds what is NVIDIA's own
 * (check-config's words on a PF without VFs) and the table.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend-vf.h"
#include "error.h"
#include "pcidev.h"
#include "vgpu.h"

/* The VFs of a PF named under a type must carry the type or be able to
 * create it now. */
static int pf_check_offers(int rootfd, const char *pf, const char *type, char **ret_problem) {
        _cleanup_free_ VfioOffer *l = NULL;
        _cleanup_free_ char *offered = NULL;
        unsigned id, nvfs = 0, nfree = 0;
        size_t n = 0;
        int r;

        if (vfio_type_id(type, &id) < 0) {
                *ret_problem = strdup("is a GPU of NVIDIA's VFIO framework, whose types are named nvidia-<ID>");
                return *ret_problem ? 1 : -ENOMEM;
        }
        error_clear();
        r = vfio_pf_offers(&vfio_nvidia, rootfd, pf, &l, &n, &nvfs, &nfree);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                char *s;
                if (l[i].type.id == id)
                        return 1;
                s = strdup_printf("%s%s%s", strempty(offered), offered ? ", " : "", l[i].type.type);
                if (!s)
                        return -ENOMEM;
                free(offered);
                offered = s;
        }
        if (nvfs == 0)
                *ret_problem = strdup_printf("is a GPU of NVIDIA's VFIO framework without VFs: run sriov-manage -e %s (or name it in [sriov])",
                                             pf);
        else
                *ret_problem = strdup_printf("cannot create %s now (its VFs offer: %s; %u of %u VFs free)",
                                             type, offered ? offered : "nothing", nfree, nvfs);
        return *ret_problem ? 1 : -ENOMEM;
}

/* An SR-IOV PF bound to nvidia whose VFs are not enabled (sriov_numvfs 0):
 * on vGPU 17+ its vGPUs come with the VFs. */
static bool nvidia_pf_without_vfs(int rootfd, const char *a) {
        char path[PATH_MAX], num[32], driver[NAME_STRING_MAX];

        if (!pci_address_is_valid(a))
                return false;
        snprintf(path, sizeof path, "sys/bus/pci/devices/%s/sriov_numvfs", a);
        if (read_small_at(rootfd, path, num, sizeof num) < 0 || !streq(num, "0")) {
                error_clear();
                return false;
        }
        return pci_device_driver(rootfd, a, driver) >= 0 && streq(driver, "nvidia");
}

static int vfio_parent_check(int rootfd, const char *parent, const char *type, char **ret_problem) {
        *ret_problem = NULL;
        if (vfio_is_pf(&vfio_nvidia, rootfd, parent) > 0)
                return pf_check_offers(rootfd, parent, type, ret_problem);
        if (nvidia_pf_without_vfs(rootfd, parent)) {
                *ret_problem = strdup_printf("is a GPU bound to nvidia without VFs: enable them (sriov-manage -e %s, or name it in [sriov])",
                                             parent);
                return *ret_problem ? 1 : -ENOMEM;
        }
        return 0;
}

static int nvidia_parent_list(int rootfd, char ***ret) {
        return vfio_pf_list(&vfio_nvidia, rootfd, ret);
}

static int nvidia_parent_is(int rootfd, const char *name) {
        return vfio_is_pf(&vfio_nvidia, rootfd, name);
}

static int nvidia_parent_offer(int rootfd, const char *parent, const char *type, BackendOffer *ret, bool *ret_offered) {
        return vf_parent_offer(&vfio_nvidia, rootfd, parent, type, ret, ret_offered);
}

static int nvidia_parent_types(int rootfd, const char *parent, SysfsType **ret, size_t *ret_n) {
        return vf_parent_types(&vfio_nvidia, rootfd, parent, ret, ret_n);
}

static int nvidia_device_append(int rootfd, SysfsMdev **l, size_t *n) {
        return vfio_vgpus_append(&vfio_nvidia, rootfd, l, n);
}

static int nvidia_device_get(int rootfd, const char *key, SysfsMdev *ret) {
        return vf_device_get(&vfio_nvidia, rootfd, key, ret);
}

static int nvidia_device_is(int rootfd, const char *name) {
        return vfio_is_vf(&vfio_nvidia, rootfd, name);
}

static bool nvidia_type_is_mine(const char *type) {
        return vf_type_is_mine(&vfio_nvidia, type);
}

static int nvidia_pick(int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type, NodeSet wish,
                       SysfsMdev *ret) {
        return vf_pick(&vfio_nvidia, rootfd, ledgerfd, c, boot_id, type, wish, ret);
}

static int nvidia_txn_new(HookContext *ctx, HookOp op, void **ret) {
        return vf_txn_new(&vfio_nvidia, ctx, op, ret);
}

static int nvidia_reconnect(HookContext *ctx) {
        return vf_reconnect(&vfio_nvidia, ctx);
}

/* recreate = eager: the VF of key programmed with type again. */
static int nvidia_device_make(int rootfd, const char *parent, const char *type, const char *key) {
        unsigned id;

        (void) parent; /* the VF's PF, by the VF's address */
        if (vfio_type_id(type, &id) < 0) {
                error_clear();
                return -EINVAL;
        }
        return vfio_vf_program(&vfio_nvidia, rootfd, key, id);
}

static void nvidia_device_record(const Config *c, int rootfd, LedgerEntry *e) {
        vgpu_record_placement(c, rootfd, &vfio_nvidia, e->uuid, e->parent, e);
}

static bool nvidia_attach_serves(const AttachChoosing *ch) {
        return vf_attach_serves(&vfio_nvidia, ch);
}

static int nvidia_attach_choose(const AttachChoosing *ch, AttachDevice *out) {
        return vf_attach_choose(&vfio_nvidia, ch, out);
}

const Backend backend_nvidia_vfio = {
        .name = "nvidia-vfio",
        .noun = "vGPU",
        .key_is_mine = vf_key_is_mine,
        .parent_list = nvidia_parent_list,
        .parent_is = nvidia_parent_is,
        .parent_offer = nvidia_parent_offer,
        .parent_types = nvidia_parent_types,
        .parent_check = vfio_parent_check,
        .device_append = nvidia_device_append,
        .device_get = nvidia_device_get,
        .device_is = nvidia_device_is,
        .release = &vgpu_release_kind,
        .eperm_is_busy = true,
        .device_make = nvidia_device_make,
        .device_record = nvidia_device_record,
        .type_is_mine = nvidia_type_is_mine,
        .pick = nvidia_pick,
        .dom_has = vf_dom_has,
        .txn_new = nvidia_txn_new,
        .txn_check = vf_txn_check,
        .txn_apply = vf_txn_apply,
        .txn_rollback = vf_txn_rollback,
        .txn_commit = vf_txn_commit,
        .txn_free = vf_txn_free,
        .reconnect = nvidia_reconnect,
        .release_one = vgpu_release_one,
        .attach_serves = nvidia_attach_serves,
        .attach_choose = nvidia_attach_choose,
};
