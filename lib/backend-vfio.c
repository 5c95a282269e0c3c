/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backend of NVIDIA's vendor-specific VFIO framework (backend.h): a
 * device is a VF carrying a vGPU, its record keyed by the VF's address, its
 * parent the PF. The sysfs side is vfio.c, the hook's side vgpu.c and its
 * placement vgpu-place.c; this file is the table that puts them behind the
 * interface.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "error.h"
#include "log.h"
#include "vfio.h"
#include "vgpu.h"

static bool vfio_key_is_mine(const char *key) {
        return ledger_key_is_vf(key);
}

static int vfio_parent_offer_of(int rootfd, const char *parent, const char *type, BackendOffer *ret, bool *ret_offered) {
        VfioOffer o;
        int r;

        r = vfio_pf_offer(rootfd, parent, type, &o, ret_offered);
        if (r < 0)
                return r;
        *ret = (BackendOffer) { .existing = o.existing, .available = o.creatable };
        return 0;
}

static int vfio_device_get(int rootfd, const char *key, SysfsMdev *ret) {
        SysfsMdev m = { .uuid = "" };
        unsigned cur;
        int r;

        r = vfio_vf_current(rootfd, key, &cur);
        if (r < 0)
                return r;
        if (cur == 0)
                return -ENOENT;
        if (vfio_vf_pf(rootfd, key, m.parent) < 0)
                error_clear(); /* a VF without its physfn link: its parent unknown */
        snprintf(m.uuid, sizeof m.uuid, "%s", key);
        snprintf(m.type, sizeof m.type, VFIO_TYPE_PREFIX "%u", cur);
        *ret = m;
        return 0;
}

static bool vfio_xml_names_key(const Domxml *d, const char *key) {
        return domxml_find_vgpu(d, key) >= 0;
}

/* --- the hook's transaction: vgpu.c's plan ----------------------------------- */

typedef struct VfioTxn {
        HookContext *ctx;
        HookOp op;
        VgpuPlan plan;
} VfioTxn;

static int vfio_txn_new(HookContext *ctx, HookOp op, void **ret) {
        VfioTxn *t = calloc(1, sizeof *t);

        if (!t)
                return -ENOMEM;
        t->ctx = ctx;
        t->op = op;
        *ret = t;
        return 0;
}

static int vfio_txn_check(void *p) {
        VfioTxn *t = p;

        if (t->op != HOOK_OP_PREPARE)
                return 0; /* migrate: vgpu_migrate() reads and chooses at once */
        return vgpu_prepare_check(t->ctx, &t->plan, LEDGER_ASSIGNED);
}

static int vfio_txn_apply(void *p) {
        VfioTxn *t = p;

        /* each undoes its own on failure */
        if (t->op != HOOK_OP_PREPARE)
                return vgpu_migrate(t->ctx, &t->plan);
        return vgpu_prepare_apply(t->ctx, &t->plan, LEDGER_ASSIGNED);
}

static int vfio_txn_rollback(void *p) {
        VfioTxn *t = p;

        return vgpu_rollback(t->ctx, &t->plan);
}

static void vfio_txn_commit(void *p) {
        (void) p; /* the records are written: nothing is left to forget */
}

static void vfio_txn_free(void *p) {
        VfioTxn *t = p;

        vgpu_plan_done(&t->plan);
        free(t);
}

static int vfio_reconnect(HookContext *ctx) {
        int r = vgpu_reconnect(ctx);

        if (r < 0)
                log_warning("cannot re-assert the guest's vGPUs: %s", error_get(r));
        return r;
}

const Backend backend_nvidia_vfio = {
        .name = "nvidia-vfio",
        .noun = "vGPU",
        .key_is_mine = vfio_key_is_mine,
        .parent_list = vfio_pf_list,
        .parent_is = vfio_is_pf,
        .parent_offer = vfio_parent_offer_of,
        .device_append = vfio_vgpus_append,
        .device_get = vfio_device_get,
        .device_is = vfio_is_vf,
        .release = &vgpu_release_kind,
        .eperm_is_busy = true,
        .device_make = NULL,
        .dom_has = vgpu_dom_may_have,
        .xml_names_key = vfio_xml_names_key,
        .txn_new = vfio_txn_new,
        .txn_check = vfio_txn_check,
        .txn_apply = vfio_txn_apply,
        .txn_rollback = vfio_txn_rollback,
        .txn_commit = vfio_txn_commit,
        .txn_free = vfio_txn_free,
        .reconnect = vfio_reconnect,
        .release_one = vgpu_release_one,
};
