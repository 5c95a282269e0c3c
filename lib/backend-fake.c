/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A backend for the tests only (built with -Dcrashpoints=true, the test
 * build): the fake kind of VF that the simulator models (tests/sim/
 * sim-fake.c), which carries a vGPU through <VF>/fakegpu/current_type and
 * names its types fake-<ID>. It is what a new kind of device costs: this
 * file, its model in the simulator, and a line in backends[] (backend.c).
 * doc/design.md §7 says how to add one.
 */
#include <errno.h>

#include "backend-vf.h"
#include "vgpu.h"

static const VfioKind fake_kind = {
        .prefix = "fake-",
        .dir = "fakegpu",
        .creatable = "creatable_types",
        .current = "current_type",
        .label = "fake VF framework (tests)",
};

static int fake_clear(int rootfd, const char *vf, unsigned timeout_msec) {
        return vgpu_kind_clear(&fake_kind, rootfd, vf, timeout_msec);
}

static const HookReleaseKind fake_release = {
        .noun = "fake vGPU", .kept = "programmed and free", .verb = "clear", .verb_noun = "clearing",
        .done = "cleared", .crashpoint = "release-after-clear", .remove = fake_clear,
};

static int fake_parent_list(int rootfd, char ***ret) {
        return vfio_pf_list(&fake_kind, rootfd, ret);
}

static int fake_parent_is(int rootfd, const char *name) {
        return vfio_is_pf(&fake_kind, rootfd, name);
}

static int fake_parent_offer(int rootfd, const char *parent, const char *type, BackendOffer *ret, bool *ret_offered) {
        return vf_parent_offer(&fake_kind, rootfd, parent, type, ret, ret_offered);
}

static int fake_parent_types(int rootfd, const char *parent, SysfsType **ret, size_t *ret_n) {
        return vf_parent_types(&fake_kind, rootfd, parent, ret, ret_n);
}

static int fake_parent_check(int rootfd, const char *parent, const char *type, char **ret_problem) {
        *ret_problem = NULL;
        if (vfio_is_pf(&fake_kind, rootfd, parent) <= 0)
                return 0;
        if (vf_type_is_mine(&fake_kind, type))
                return 1;
        *ret_problem = strdup_printf("is a GPU of fake VFs, whose types are named %s<ID>", fake_kind.prefix);
        return *ret_problem ? 1 : -ENOMEM;
}

static int fake_device_append(int rootfd, SysfsMdev **l, size_t *n) {
        return vfio_vgpus_append(&fake_kind, rootfd, l, n);
}

static int fake_device_get(int rootfd, const char *key, SysfsMdev *ret) {
        return vf_device_get(&fake_kind, rootfd, key, ret);
}

static int fake_device_is(int rootfd, const char *name) {
        return vfio_is_vf(&fake_kind, rootfd, name);
}

static bool fake_type_is_mine(const char *type) {
        return vf_type_is_mine(&fake_kind, type);
}

static int fake_pick(int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type, NodeSet wish,
                     SysfsMdev *ret) {
        return vf_pick(&fake_kind, rootfd, ledgerfd, c, boot_id, type, wish, ret);
}

static int fake_txn_new(HookContext *ctx, HookOp op, void **ret) {
        return vf_txn_new(&fake_kind, ctx, op, ret);
}

static int fake_reconnect(HookContext *ctx) {
        return vf_reconnect(&fake_kind, ctx);
}

static int fake_release_one(HookContext *ctx, LedgerEntry *e, unsigned timeout_msec) {
        return vgpu_kind_release_one(&fake_kind, &fake_release, ctx, e, timeout_msec);
}

static bool fake_attach_serves(const AttachChoosing *ch) {
        return vf_attach_serves(&fake_kind, ch);
}

static int fake_attach_choose(const AttachChoosing *ch, AttachDevice *out) {
        return vf_attach_choose(&fake_kind, ch, out);
}

const Backend backend_fake = {
        .name = "fake",
        .noun = "fake vGPU",
        .key_is_mine = vf_key_is_mine,
        .parent_list = fake_parent_list,
        .parent_is = fake_parent_is,
        .parent_offer = fake_parent_offer,
        .parent_types = fake_parent_types,
        .parent_check = fake_parent_check,
        .device_append = fake_device_append,
        .device_get = fake_device_get,
        .device_is = fake_device_is,
        .release = &fake_release,
        .eperm_is_busy = true,
        .device_make = NULL,
        .type_is_mine = fake_type_is_mine,
        .pick = fake_pick,
        .dom_has = vf_dom_has,
        .txn_new = fake_txn_new,
        .txn_check = vf_txn_check,
        .txn_apply = vf_txn_apply,
        .txn_rollback = vf_txn_rollback,
        .txn_commit = vf_txn_commit,
        .txn_free = vf_txn_free,
        .reconnect = fake_reconnect,
        .release_one = fake_release_one,
        .attach_serves = fake_attach_serves,
        .attach_choose = fake_attach_choose,
};
