/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The hook's operations on VFIO-framework vGPUs (vgpu.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "crash.h"
#include "log.h"
#include "owner.h"
#include "vgpu.h"

void vgpu_plan_done(VgpuPlan *p) {
        free(p->items);
        p->items = NULL;
        p->n = 0;
}

bool vgpu_dom_may_have(const Domxml *d) {
        for (size_t i = 0; d && i < d->n_vgpus; i++)
                if (d->vgpus[i].has_meta || !d->vgpus[i].managed)
                        return true;
        return false;
}

int vgpu_is_ours(const VfioKind *kind, int rootfd, const DomxmlVgpu *v) {
        int r = vfio_is_vf(kind, rootfd, v->pci);

        if (r < 0)
                return error_set(r, "cannot look at PCI device %s: %s", v->pci, strerror(-r));
        if (r == 0 && v->has_meta && backend_of_device(rootfd, v->pci))
                return 0; /* another backend's VF */
        if (r == 0 && v->has_meta)
                return error_set(-ENODEV, "PCI device %s has an <mh:vgpu> entry but is not a VF of NVIDIA's vGPU "
                                 "(no /sys/bus/pci/devices/%s/%s/%s): enable the VFs "
                                 "(sriov-manage -e <PF>, or [sriov] in the config) or fix the hostdev's address",
                                 v->pci, v->pci, kind->dir, kind->current);
        return r;
}

int vgpu_want_types(const VfioKind *kind, const Config *c, const DomxmlVgpu *v, const char *pf, unsigned current, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        const ConfigType *t;
        unsigned id;
        int r = 0;

        if (v->type[0]) {
                if (vfio_kind_type_id(kind, v->type, &id) < 0)
                        return error_set(-EINVAL, "vGPU %s asks for type %s, but a vGPU of NVIDIA's VFIO framework has a type %s<ID>",
                                         v->pci, v->type, kind->prefix);
                r = strv_extend(&l, v->type);
        } else if (v->mdev_class[0]) {
                for (size_t i = 0; r >= 0 && i < c->n_types; i++)
                        if (streq_ptr(c->types[i].mdev_class, v->mdev_class) &&
                            vfio_kind_type_id(kind, c->types[i].name, &id) >= 0)
                                r = strv_extend(&l, c->types[i].name);
                if (r >= 0 && !l)
                        return error_set(-EINVAL, "vGPU %s asks for class %s, but no enabled %s<ID> type has mdev_class = %s",
                                         v->pci, v->mdev_class, kind->prefix, v->mdev_class);
        } else if (pf && (t = config_parent_type(c, pf)) && vfio_kind_type_id(kind, t->name, &id) >= 0) {
                r = strv_extend(&l, t->name);
        } else if (current) {
                char name[NAME_STRING_MAX];
                snprintf(name, sizeof name, "%s%u", kind->prefix, current);
                r = strv_extend(&l, name);
        } else
                return error_set(-ENOENT, "vGPU %s has no type and the config has none for its GPU %s: add <mh:vgpu pci=\"%s\" type=\"%s<ID>\"/> "
                                 "to the domain's <metadata><mh:mdevs xmlns:mh=\"" DOMXML_NAMESPACE "\"> "
                                 "(the IDs: /sys/bus/pci/devices/%s/%s/%s), or name %s in the config",
                                 v->pci, pf ? pf : "?", v->pci, kind->prefix, v->pci, kind->dir, kind->creatable, pf ? pf : "the PF");
        if (r < 0)
                return r;
        *ret = steal_pointer(&l);
        return 0;
}

int vgpu_prepare_check(HookContext *ctx, VgpuPlan *p, LedgerState state) {
        const Domxml *dom = ctx->dom;
        int r;

        p->items = calloc(dom->n_vgpus + 1, sizeof *p->items);
        if (!p->items)
                return -ENOMEM;
        p->n = 0;
        for (size_t i = 0; i < dom->n_vgpus; i++) {
                const DomxmlVgpu *v = &dom->vgpus[i];
                VgpuItem *it = &p->items[p->n];
                _cleanup_strv_free_ char **types = NULL;
                _cleanup_free_ VfioType *creatable = NULL;
                size_t n_creatable = 0;
                unsigned current;
                LedgerEntry e;

                r = vgpu_is_ours(p->kind, ctx->rootfd, v);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue; /* an ordinary PCI device */
                *it = (VgpuItem) { .index = i };
                snprintf(it->vf, sizeof it->vf, "%.12s", v->pci);
                r = vfio_vf_pf(ctx->rootfd, it->vf, it->pf);
                if (r < 0)
                        return r;
                r = vfio_vf_current(p->kind, ctx->rootfd, it->vf, &current);
                if (r < 0)
                        return r;
                r = vgpu_want_types(p->kind, ctx->config, v, it->pf, current, &types);
                if (r < 0)
                        return r;
                r = ledger_read(ctx->ledgerfd, it->vf, &e);
                if (r < 0 && r != -ENOENT)
                        return r;
                if (r >= 0 && !owner_may_give(owner_of(&e, ctx->boot_id, ctx->guest), OWNER_NAMED))
                        return error_set(-EBUSY, "vGPU %s is held by guest '%s' (%s); give this guest another VF (mdev-hooks pick %s) or stop '%s'",
                                         it->vf, e.guest, ledger_state_to_string(e.state), types[0], e.guest);
                if (current) {
                        snprintf(it->type, sizeof it->type, "%s%u", p->kind->prefix, current);
                        if (!strv_contains(types, it->type))
                                return error_set(-EMEDIUMTYPE, "VF %s carries vGPU type %s, but the domain asks for %s; clear it (echo 0 > /sys/bus/pci/devices/%s/%s/%s) or fix the domain's metadata",
                                                 it->vf, it->type, types[0], it->vf, p->kind->dir, p->kind->current);
                        it->id = current;
                        it->program = false;
                        p->n++;
                        continue;
                }
                r = vfio_vf_creatable(p->kind, ctx->rootfd, it->vf, &creatable, &n_creatable);
                if (r < 0)
                        return r;
                for (char **t = types; *t && !it->id; t++)
                        for (size_t k = 0; k < n_creatable; k++)
                                if (streq(creatable[k].type, *t)) {
                                        it->id = creatable[k].id;
                                        snprintf(it->type, sizeof it->type, "%s", *t);
                                        break;
                                }
                if (!it->id) {
                        char what[1024];
                        vfio_types_describe(creatable, n_creatable, what, sizeof what);
                        return error_set(-ENOSPC, "%s%s is not creatable on VF %s now (GPU %s); creatable there: %s%s",
                                         strv_length(types) > 1 ? "none of " : "", types[0], it->vf, it->pf, what,
                                         n_creatable == 0 ? " (the GPU holds vGPUs of another size or is full)" : "");
                }
                it->program = true;
                p->n++;
        }
        (void) state;
        return 0;
}

static void entry_fill(const HookContext *ctx, LedgerEntry *e, const VgpuItem *it, LedgerState state,
                       LedgerOrigin origin) {
        LedgerHolder h = { .guest = ctx->guest, .guest_uuid = ctx->dom ? ctx->dom->uuid : NULL, .boot_id = ctx->boot_id,
                          .since = (uint64_t) time(NULL) };

        ledger_entry_init(e, it->vf, it->pf, it->type, state, origin, &h);
}

static void sleep_msec(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

int vgpu_clear(int rootfd, const char *vf, unsigned timeout_msec) {
        return vgpu_kind_clear(&vfio_nvidia, rootfd, vf, timeout_msec);
}

int vgpu_kind_clear(const VfioKind *kind, int rootfd, const char *vf, unsigned timeout_msec) {
        unsigned long long deadline = now_usec() + (unsigned long long) timeout_msec * 1000ULL;
        unsigned wait = 10, current;
        int r;

        for (;;) {
                r = vfio_vf_current(kind, rootfd, vf, &current);
                if (r == -ENOENT) {
                        error_clear();
                        return 0; /* the VF is gone (VFs disabled): nothing to clear */
                }
                if (r < 0)
                        return r;
                if (current == 0)
                        return 0;
                r = vfio_vf_clear(kind, rootfd, vf);
                if (r >= 0)
                        return 0;
                if ((r != -EPERM && r != -EBUSY) || now_usec() >= deadline)
                        return r;
                sleep_msec(wait);
                wait = wait * 2 > 200 ? 200 : wait * 2;
        }
}

/* In MIG mode the driver picks the GPU instance: the record says which. */
void vgpu_record_placement(const Config *c, int rootfd, const VfioKind *k, const char *vf, const char *pf, LedgerEntry *e) {
        const ConfigGpu *g = config_gpu(c, pf);
        char path[128], buf[32];

        if (!g || g->mode != CONFIG_GPU_MODE_MIG)
                return;
        snprintf(path, sizeof path, "sys/bus/pci/devices/%s/%s/gpu_instance_id", vf, k->dir);
        if (read_small_at(rootfd, path, buf, sizeof buf) < 0 || safe_atou(buf, &e->gpu_instance_id) < 0)
                goto unknown;
        snprintf(path, sizeof path, "sys/bus/pci/devices/%s/%s/placement_id", vf, k->dir);
        if (read_small_at(rootfd, path, buf, sizeof buf) < 0 || safe_atou(buf, &e->placement_id) < 0)
                goto unknown;
        e->has_placement = true;
        return;
unknown:
        e->has_placement = false;
        log_warning("vGPU %s (%s): its GPU instance cannot be read back from /%s; recorded without it", vf, e->type, path);
        error_clear();
}

/* Puts one item's record back as it was. */
static int item_record_restore(HookContext *ctx, const VgpuItem *it) {
        return it->had_record ? ledger_write_nosync(ctx->ledgerfd, &it->prev)
                              : ledger_remove_nosync(ctx->ledgerfd, it->vf);
}

int vgpu_rollback(HookContext *ctx, VgpuPlan *p) {
        int ret = 0;

        for (size_t i = p->n; i-- > 0;) {
                VgpuItem *it = &p->items[i];
                int r;

                if (!it->done)
                        continue;
                if (it->program) {
                        r = vgpu_kind_clear(p->kind, ctx->rootfd, it->vf, 1000);
                        if (r < 0) {
                                /* left programmed: its record stays, marked for later */
                                LedgerEntry e;
                                entry_fill(ctx, &e, it, LEDGER_FREE, LEDGER_CREATED);
                                e.guest[0] = e.guest_uuid[0] = '\0';
                                e.remove_pending = true;
                                (void) ledger_write_nosync(ctx->ledgerfd, &e);
                                if (ret == 0)
                                        ret = error_set(r, "cannot clear VF %s: %s; marked remove_pending", it->vf, strerror(-r));
                                it->done = false;
                                continue;
                        }
                }
                r = item_record_restore(ctx, it);
                if (r < 0 && ret == 0)
                        ret = r;
                it->done = false;
        }
        return ret;
}

int vgpu_prepare_apply(HookContext *ctx, VgpuPlan *p, LedgerState state) {
        for (size_t i = 0; i < p->n; i++) {
                VgpuItem *it = &p->items[i];
                LedgerOrigin origin = LEDGER_CREATED;
                LedgerEntry e;
                int r;

                r = ledger_read(ctx->ledgerfd, it->vf, &it->prev);
                if (r < 0 && r != -ENOENT)
                        goto fail;
                it->had_record = r >= 0;
                if (!it->program) {
                        /* ours (programmed by mdev-hooks in this boot, e.g. kept free) or borrowed */
                        bool ours = it->had_record && it->prev.origin == LEDGER_CREATED &&
                                    streq(it->prev.boot_id, ctx->boot_id) && streq(it->prev.type, it->type);
                        origin = ours ? LEDGER_CREATED : LEDGER_BORROWED;
                }
                entry_fill(ctx, &e, it, state, origin);
                if (!it->program) /* it carries its vGPU already: where the driver put it */
                        vgpu_record_placement(ctx->config, ctx->rootfd, p->kind, it->vf, it->pf, &e);
                /* the intent, before the program (crash safety) */
                r = ledger_write_nosync(ctx->ledgerfd, &e);
                if (r < 0)
                        goto fail;
                it->done = true;
                if (it->program) {
                        r = vfio_vf_program(p->kind, ctx->rootfd, it->vf, it->id);
                        if (r < 0) {
                                _cleanup_free_ VfioType *c = NULL;
                                size_t n_c = 0;
                                char what[1024] = "unknown";

                                it->done = false;
                                (void) item_record_restore(ctx, it);
                                if (vfio_vf_creatable(p->kind, ctx->rootfd, it->vf, &c, &n_c) >= 0)
                                        vfio_types_describe(c, n_c, what, sizeof what);
                                r = error_set(r, "cannot program VF %s with %s: %s; creatable there now: %s",
                                              it->vf, it->type, strerror(-r), what);
                                goto fail;
                        }
                        CRASHPOINT("prepare-after-program");
                        vgpu_record_placement(ctx->config, ctx->rootfd, p->kind, it->vf, it->pf, &e);
                        if (e.has_placement && (r = ledger_write_nosync(ctx->ledgerfd, &e)) < 0)
                                goto fail;
                }
                log_info("vGPU %s (%s on %s): %s", it->vf, it->type, it->pf,
                         it->program ? "programmed" : origin == LEDGER_BORROWED ? "borrowed" : "reused");
                continue;
fail: {
                ErrorSaved why; /* the rollback may set messages of its own */
                int k;

                error_save(&why);
                k = vgpu_rollback(ctx, p);
                if (k < 0)
                        log_warning("rollback left something behind: %s", error_get(k));
                return error_restore(r, &why);
        }
        }
        return 0;
}

int vgpu_reconnect(const VfioKind *kind, HookContext *ctx) {
        VgpuPlan p = { .kind = kind };
        size_t k = 0;
        int r;

        r = vgpu_prepare_check(ctx, &p, LEDGER_ASSIGNED);
        if (r >= 0) {
                for (size_t i = 0; i < p.n; i++) {
                        if (p.items[i].program) {
                                log_warning("vGPU %s of the running guest carries no vGPU type", p.items[i].vf);
                                continue;
                        }
                        p.items[k++] = p.items[i];
                }
                p.n = k;
                r = vgpu_prepare_apply(ctx, &p, LEDGER_ASSIGNED);
        }
        vgpu_plan_done(&p);
        return r;
}

const HookReleaseKind vgpu_release_kind = {
        .noun = "vGPU", .kept = "programmed and free", .verb = "clear", .verb_noun = "clearing",
        .done = "cleared", .crashpoint = "release-after-clear", .remove = vgpu_clear,
};

int vgpu_release_one(HookContext *ctx, LedgerEntry *e, unsigned timeout_msec) {
        return vgpu_kind_release_one(&vfio_nvidia, &vgpu_release_kind, ctx, e, timeout_msec);
}

int vgpu_kind_release_one(const VfioKind *kind, const HookReleaseKind *words, HookContext *ctx, LedgerEntry *e,
                          unsigned timeout_msec) {
        unsigned current = 0;
        char type[NAME_STRING_MAX] = "";
        int r;

        /* Gone: a record of an earlier boot, a VF that is not there, or one
         * that no longer carries the record's type. */
        r = streq(e->boot_id, ctx->boot_id) ? vfio_vf_current(kind, ctx->rootfd, e->uuid, &current) : -ENOENT;
        if (current)
                snprintf(type, sizeof type, "%s%u", kind->prefix, current);
        if (r >= 0 && (current == 0 || !streq(type, e->type)))
                r = -ENOENT;
        return hook_release_record(ctx, e, words, r, timeout_msec);
}
