/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * migrate begin / restore begin of the VFs a guest gets whole
 * (backend-whole.h): libvirt runs the destination's hook with the incoming
 * XML, whose hostdevs name the source host's VFs. Each of the guest's VFs
 * of the kind gets a VF here of the same type (its VRAM quota) on a GPU
 * whose VFs can migrate (WholeKind.migratable): the incoming address when
 * it is such a VF and free, else the one placement gives (whole_choose()).
 * The check reads only; vgpu_migrate_apply() claims each as incoming
 * (vgpu.c's records, origin borrowed: mdev-hooks programs nothing on such
 * a VF) and rewrites the hostdev's source address and <mh:vgpu pci=> where
 * the VF differs.
 * The prepare that follows makes the claim assigned; libvirt's release on
 * the destination after a failed migration forgets it like any other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend-vf.h"
#include "backend-whole.h"
#include "error.h"
#include "log.h"
#include "owner.h"
#include "place.h"

/* Whether the domain's hostdev v is one of w's: a VF of w here, or (the
 * source host's address) an entry naming one of w's types at an address
 * that is no backend's device here. 1, 0, -errno. */
static int is_whole(const WholeKind *w, int rootfd, const DomxmlVgpu *v) {
        int r = vfio_is_vf(w->kind, rootfd, v->pci);

        if (r != 0)
                return r;
        return v->has_meta && vf_type_is_mine(w->kind, v->type) && !backend_of_device(rootfd, v->pci);
}

/* The type v asks for: its entry's, else the one the VF here carries (a
 * restore on the host it was saved on). */
static int want_type(const WholeKind *w, const HookContext *ctx, const DomxmlVgpu *v, char type[NAME_STRING_MAX]) {
        unsigned cur;

        if (v->type[0] && !vf_type_is_mine(w->kind, v->type))
                return error_set(-EMEDIUMTYPE, "VF %s is an %s, but the domain asks for %s; fix the domain's metadata",
                                 v->pci, w->noun, v->type);
        if (v->type[0]) {
                snprintf(type, NAME_STRING_MAX, "%s", v->type);
                return 0;
        }
        if (vfio_vf_current(w->kind, ctx->rootfd, v->pci, &cur) >= 0 && cur > 0) {
                snprintf(type, NAME_STRING_MAX, "%s%u", w->kind->prefix, cur);
                return 0;
        }
        error_clear();
        return error_set(-ENOENT, "%s %s of guest '%s' names no type to find here: add <mh:vgpu pci=\"%s\" type=\"%s<MiB>\"/> to the domain's metadata",
                         w->noun, v->pci, ctx->guest, v->pci, w->kind->prefix);
}

/* Whether vf is one of w's here, carrying want's type, not chosen already. */
static bool prefer_fits(const WholeKind *w, int rootfd, const WholeWant *want, const char *vf) {
        char name[NAME_STRING_MAX];
        unsigned cur;

        if (vfio_is_vf(w->kind, rootfd, vf) <= 0 || vfio_vf_current(w->kind, rootfd, vf, &cur) < 0) {
                error_clear();
                return false;
        }
        snprintf(name, sizeof name, "%s%u", w->kind->prefix, cur);
        return streq(name, want->type) && !whole_want_taken(want, vf);
}

/* Whether the incoming address is a VF here that the guest may have as it
 * is: prefer_fits(), free for the guest, on a GPU whose VFs can migrate.
 * 1 and *ret filled, 0 not, -errno. */
static int try_prefer(const WholeKind *w, const HookContext *ctx, const WholeWant *want, const char *vf,
                      SysfsMdev *ret) {
        _cleanup_free_ char *why = NULL;
        OwnerState s;
        int r;

        if (!prefer_fits(w, ctx->rootfd, want, vf))
                return 0;
        r = owner_read(ctx->ledgerfd, vf, ctx->boot_id, ctx->guest, &s, NULL);
        if (r < 0)
                return r;
        if (!owner_may_give(s, OWNER_OFFERED))
                return 0;
        if (vfio_vf_pf(ctx->rootfd, vf, ret->parent) < 0) {
                error_clear();
                return 0;
        }
        r = whole_pf_migratable(w, ctx->rootfd, ret->parent, &why);
        if (r <= 0)
                return r; /* 0: placement says why, if no other VF fits */
        snprintf(ret->uuid, sizeof ret->uuid, "%s", vf);
        snprintf(ret->type, sizeof ret->type, "%s", want->type);
        return 1;
}

/* One VF here for the domain's v: *it filled. */
static int choose_one(const WholeKind *w, HookContext *ctx, const WholeWant *want, size_t index, VgpuItem *it) {
        const DomxmlVgpu *v = &ctx->dom->vgpus[index];
        SysfsMdev m = { .uuid = "" };
        unsigned id;
        int r;

        r = try_prefer(w, ctx, want, v->pci, &m);
        if (r > 0 && want->wish && !place_near(ctx->rootfd, want->wish, m.parent)) {
                SysfsMdev near = { .uuid = "" };

                /* far from the guest's nodes: a VF near them if one is free,
                 * else the incoming address as it is */
                if (whole_choose(w, ctx->rootfd, ctx->ledgerfd, ctx->config, ctx->boot_id, want, &near) >= 0 &&
                    place_near(ctx->rootfd, want->wish, near.parent))
                        m = near;
                error_clear();
        }
        if (r == 0)
                r = whole_choose(w, ctx->rootfd, ctx->ledgerfd, ctx->config, ctx->boot_id, want, &m);
        if (r < 0)
                return error_prefix(r, "guest '%s' cannot have its %s %s (%s) here", ctx->guest, w->noun, v->pci,
                                    want->type);
        r = vfio_kind_type_id(w->kind, m.type, &id);
        if (r < 0)
                return r;
        *it = (VgpuItem) { .index = index, .id = id, .program = false };
        snprintf(it->vf, sizeof it->vf, "%.12s", m.uuid);
        snprintf(it->pf, sizeof it->pf, "%.12s", m.parent);
        snprintf(it->type, sizeof it->type, "%s", m.type);
        return 0;
}

int whole_migrate_check(const WholeKind *w, HookContext *ctx, VgpuPlan *p) {
        const Domxml *dom = ctx->dom;
        _cleanup_free_ char (*taken)[PCI_ADDRESS_STRING_MAX] = NULL;
        int r;

        p->items = calloc(dom->n_vgpus + 1, sizeof *p->items);
        taken = calloc(dom->n_vgpus + 1, sizeof *taken);
        if (!p->items || !taken)
                return -ENOMEM;
        p->n = 0;
        for (size_t i = 0; i < dom->n_vgpus; i++) {
                char type[NAME_STRING_MAX];
                WholeWant want;

                r = is_whole(w, ctx->rootfd, &dom->vgpus[i]);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue; /* another backend's, or an ordinary PCI device */
                r = want_type(w, ctx, &dom->vgpus[i], type);
                if (r < 0)
                        return r;
                want = (WholeWant) { .type = type, .wish = dom->numa_nodes, .guest = ctx->guest, .taken = taken,
                                     .n_taken = p->n, .migratable = true };
                r = choose_one(w, ctx, &want, i, &p->items[p->n]);
                if (r < 0)
                        return r;
                memcpy(taken[p->n], p->items[p->n].vf, sizeof taken[p->n]);
                p->n++;
        }
        return 0;
}
