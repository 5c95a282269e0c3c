/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backend of Intel's xe SR-IOV VFs (backend.h, xesriov.h): a device is
 * a VF of a PF bound to xe, whole, of the type its VRAM quota gives
 * (intel-xe-<MiB>), its record keyed by the VF's address; a guest names it
 * as a <hostdev type='pci' managed='yes'> with an <mh:vgpu pci= [type=]>
 * entry. What it does with a guest is what every backend of VFs given whole
 * does (backend-whole.h: prepare borrows, release forgets, pick places,
 * migrate and restore choose a free VF of the type and rewrite the
 * hostdev's address); this file adds what is xe's: its kind, which GPUs'
 * VFs can migrate (through xe-vfio-pci, xesriov_pf_migratable()), the
 * scheduling profile a guest's entry may ask of its VF (exec_quantum_ms=,
 * preempt_timeout_us=: written at prepare, read back), its types'
 * description and check-config's words on provisioning.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend-vf.h"
#include "backend-whole.h"
#include "error.h"
#include "log.h"
#include "vgpu.h"
#include "xesriov.h"

/* A VF's scheduling profile (xesriov.h): both knobs read. */
static int xe_sched_get(int rootfd, const char *vf, DomxmlSched *ret) {
        DomxmlSched s = { .has_exec_quantum = true, .has_preempt_timeout = true };
        int r;

        r = xesriov_vf_sched_read(rootfd, vf, "exec_quantum_ms", &s.exec_quantum_ms);
        if (r >= 0)
                r = xesriov_vf_sched_read(rootfd, vf, "preempt_timeout_us", &s.preempt_timeout_us);
        if (r < 0)
                return r;
        *ret = s;
        return 0;
}

/* The knobs s asks for, each written and read back. */
static int xe_sched_set(int rootfd, const char *vf, const DomxmlSched *s) {
        int r = 0;

        if (s->has_exec_quantum)
                r = xesriov_vf_sched_write(rootfd, vf, "exec_quantum_ms", s->exec_quantum_ms);
        if (r >= 0 && s->has_preempt_timeout)
                r = xesriov_vf_sched_write(rootfd, vf, "preempt_timeout_us", s->preempt_timeout_us);
        return r;
}

static const WholeKind xe_whole = {
        .kind = &vfio_xe,
        .noun = "Intel xe VF",
        .size = "its VRAM quota",
        .fix = "a quota is given before the VFs are enabled: echo 0 > sriov_numvfs, write sriov_admin/vfN/profile/vram_quota, enable them again",
        .unset = "its VRAM quota is 0; provision it (sriov_admin/vfN/profile/vram_quota) before enabling the VFs, or give no VF a quota and let xe share the VRAM out",
        .migratable = xesriov_pf_migratable,
        .sched_get = xe_sched_get,
        .sched_set = xe_sched_set,
};

static const HookReleaseKind xe_release = {
        .noun = "Intel VF", .kept = "free", .verb = "forget", .verb_noun = "forgetting",
        .done = "forgotten", .crashpoint = "release-after-clear", .remove = whole_forget,
};

static int xe_parent_list(int rootfd, char ***ret) {
        return vfio_pf_list(&vfio_xe, rootfd, ret);
}

static int xe_parent_is(int rootfd, const char *name) {
        return vfio_is_pf(&vfio_xe, rootfd, name);
}

static bool xe_type_is_mine(const char *type) {
        return vf_type_is_mine(&vfio_xe, type);
}

static int xe_parent_offer(int rootfd, const char *parent, const char *type, BackendOffer *ret, bool *ret_offered) {
        return whole_parent_offer(&xe_whole, rootfd, parent, type, ret, ret_offered);
}

/* Whether the GPU's VFs migrate, for a type's description. */
static const char *migrates_words(int rootfd, const char *parent) {
        _cleanup_free_ char *why = NULL;
        int r = xesriov_pf_migratable(rootfd, parent, &why);

        if (r < 0) {
                error_clear();
                return "";
        }
        return r > 0 ? "; its VFs can migrate (xe-vfio-pci)" : "; its VFs cannot migrate (xe-vfio-pci does not drive this GPU here)";
}

/* One type per VRAM quota its VFs have (vfio_pf_offers(): the kind's
 * VFs carry their type). */
static int xe_parent_types(int rootfd, const char *parent, SysfsType **ret, size_t *ret_n) {
        _cleanup_free_ VfioOffer *l = NULL;
        const char *migrates;
        SysfsType *types;
        size_t n = 0;
        int r;

        r = vfio_pf_offers(&vfio_xe, rootfd, parent, &l, &n, NULL, NULL);
        if (r < 0)
                return r;
        migrates = migrates_words(rootfd, parent);
        types = calloc(n + 1, sizeof *types);
        if (!types)
                return -ENOMEM;
        *ret = types;
        *ret_n = 0;
        for (size_t i = 0; i < n; i++) {
                SysfsType *t = &types[(*ret_n)++];
                BackendOffer o = { 0 };
                bool offered;

                r = xe_parent_offer(rootfd, parent, l[i].type.type, &o, &offered);
                if (r < 0)
                        return r;
                t->id = strdup(l[i].type.type);
                t->name = strdup_printf("Intel xe VF, %u MiB VRAM", l[i].type.id);
                t->device_api = strdup("vfio-pci");
                t->description = strdup_printf("%s: a VF with a VRAM quota of %u MiB; %u of %u such VFs free%s",
                                               vfio_xe.label, l[i].type.id, o.available, o.existing + o.available,
                                               migrates);
                t->available = o.available;
                if (!t->id || !t->name || !t->device_api || !t->description)
                        return -ENOMEM;
        }
        return 0;
}

/* check-config: a GPU of xe's named under a type must have VFs with that
 * quota (the boot plan gives them the quotas [gpu_<PF>] declares). */
static int xe_parent_check(int rootfd, const char *parent, const char *type, char **ret_problem) {
        _cleanup_free_ VfioOffer *l = NULL;
        char what[512];
        size_t n = 0, o = 0;
        unsigned id;
        int r;

        *ret_problem = NULL;
        if (xesriov_is_pf(rootfd, parent) <= 0)
                return 0;
        r = vfio_pf_offers(&vfio_xe, rootfd, parent, &l, &n, NULL, NULL);
        if (r < 0)
                return r;
        if (vfio_kind_type_id(&vfio_xe, type, &id) >= 0)
                for (size_t i = 0; i < n; i++)
                        if (l[i].type.id == id)
                                return 1;
        what[0] = '\0';
        for (size_t i = 0; i < n && o < sizeof what; i++)
                o += (size_t) snprintf(what + o, sizeof what - o, "%s%s", i ? ", " : "", l[i].type.type);
        if (n == 0)
                *ret_problem = strdup_printf("is an Intel GPU on xe without provisioned VFs: declare them in [gpu_<PF>] (vfs, vram_quota) and run mdev-hooks gpu plan");
        else
                *ret_problem = strdup_printf("is an Intel GPU on xe whose VFs are %s, not %s: name one of those, or declare that quota in [gpu_<PF>] vram_quota, disable its VFs when no guest holds one and run mdev-hooks gpu plan",
                                             what, type);
        return *ret_problem ? 1 : -ENOMEM;
}

static int xe_device_append(int rootfd, SysfsMdev **l, size_t *n) {
        return vfio_vgpus_append(&vfio_xe, rootfd, l, n);
}

static int xe_device_get(int rootfd, const char *key, SysfsMdev *ret) {
        return vf_device_get(&vfio_xe, rootfd, key, ret);
}

static int xe_device_is(int rootfd, const char *name) {
        return xesriov_is_vf(rootfd, name);
}

static int xe_pick(int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type, NodeSet wish,
                   SysfsMdev *ret) {
        return whole_pick(&xe_whole, rootfd, ledgerfd, c, boot_id, type, wish, ret);
}

static int xe_txn_new(HookContext *ctx, HookOp op, void **ret) {
        return whole_txn_new(&xe_whole, ctx, op, ret);
}

static int xe_reconnect(HookContext *ctx) {
        return vf_reconnect(&vfio_xe, ctx);
}

/* After a guest: its VF's scheduling back to what the GPU's [gpu_<PF>]
 * declares, where it declares any (a guest's entry may have changed it at
 * prepare). Best effort: the VF is released either way; a failure is one
 * warning, and the next plan run writes it. */
static void sched_declared_restore(HookContext *ctx, const LedgerEntry *e) {
        static const char *const knob[2] = { "exec_quantum_ms", "preempt_timeout_us" };
        const ConfigGpu *g = ctx->config ? config_gpu(ctx->config, e->parent) : NULL;
        _cleanup_free_ XesriovVfProfile *prof = NULL;
        char pf[PCI_ADDRESS_STRING_MAX];
        unsigned k, cur;

        if (!g || (!g->exec_quantum_ms.v && !g->preempt_timeout_us.v))
                return;
        if (xesriov_declared_from_config(g, &prof) < 0 || xesriov_vf_index(ctx->rootfd, e->uuid, pf, &k) < 0 ||
            k == 0 || k > g->vfs) {
                error_clear();
                return;
        }
        for (unsigned i = 0; i < 2; i++) {
                const XesriovVfProfile *p = &prof[k - 1];
                int r;

                if (!p->has_sched[i] ||
                    (xesriov_vf_sched_read(ctx->rootfd, e->uuid, knob[i], &cur) >= 0 && cur == p->sched[i]))
                        continue;
                r = xesriov_vf_sched_write(ctx->rootfd, e->uuid, knob[i], p->sched[i]);
                if (r < 0)
                        log_warning("VF %s keeps the scheduling guest '%s' set: %s; the next 'mdev-hooks gpu plan' writes [gpu_%s]'s",
                                    e->uuid, e->guest, error_get(r), e->parent);
                error_clear();
        }
}

static int xe_release_one(HookContext *ctx, LedgerEntry *e, unsigned timeout_msec) {
        LedgerEntry was = *e;
        int r;

        r = vgpu_kind_release_one(&vfio_xe, &xe_release, ctx, e, timeout_msec);
        if (r >= 0)
                sched_declared_restore(ctx, &was);
        return r;
}

static bool xe_attach_serves(const AttachChoosing *ch) {
        return whole_attach_serves(&xe_whole, ch);
}

static int xe_attach_choose(const AttachChoosing *ch, AttachDevice *out) {
        return whole_attach_choose(&xe_whole, ch, out);
}

const Backend backend_xe = {
        .name = "intel-xe",
        .noun = "Intel VF",
        .key_is_mine = vf_key_is_mine,
        .parent_list = xe_parent_list,
        .parent_is = xe_parent_is,
        .parent_offer = xe_parent_offer,
        .parent_types = xe_parent_types,
        .parent_check = xe_parent_check,
        .device_append = xe_device_append,
        .device_get = xe_device_get,
        .device_is = xe_device_is,
        .release = &xe_release,
        .eperm_is_busy = false,
        .device_make = NULL,
        .type_is_mine = xe_type_is_mine,
        .pick = xe_pick,
        .managed = true,
        .dom_has = vf_dom_has,
        .txn_new = xe_txn_new,
        .txn_check = whole_txn_check,
        .txn_apply = whole_txn_apply,
        .txn_rollback = whole_txn_rollback,
        .txn_commit = whole_txn_commit,
        .txn_free = whole_txn_free,
        .reconnect = xe_reconnect,
        .release_one = xe_release_one,
        .attach_serves = xe_attach_serves,
        .attach_choose = xe_attach_choose,
};
