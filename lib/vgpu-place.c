/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Choosing a VF for a vGPU type (vgpu.h): migrate/restore on the destination
 * and `mdev-hooks pick`. Only here are several PFs and their VFs read: a
 * prepare has its VF fixed by the domain XML.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "inventory.h"
#include "log.h"
#include "owner.h"
#include "place.h"
#include "vgpu.h"

typedef struct PfStat {
        char pf[PCI_ADDRESS_STRING_MAX];
        const char *type;            /* the type it is a candidate for */
        unsigned order;              /* of that type in the wanted list */
        unsigned of_type;            /* VFs carrying the type */
        unsigned other;              /* VFs carrying another type */
        unsigned nvfs;
        char free_vf[PCI_ADDRESS_STRING_MAX]; /* first unprogrammed VF nobody holds, "" none */
        bool near;                   /* on a node the guest wishes (place_near()) */
        char why[160];               /* when it cannot take one */
} PfStat;

static bool taken_has(char (*taken)[PCI_ADDRESS_STRING_MAX], size_t n, const char *vf) {
        for (size_t i = 0; i < n; i++)
                if (streq(taken[i], vf))
                        return true;
        return false;
}

/* 1 when the VF may not be offered to guest (owner.h: another guest holds
 * it, or a clear is pending on it), 0 when it may. */
static int vf_held(int ledgerfd, const char *boot_id, const char *guest, const char *vf, LedgerEntry *ret) {
        OwnerState s;
        int r;

        r = owner_read(ledgerfd, vf, boot_id, guest, &s, ret);
        if (r < 0)
                return r;
        return !owner_may_give(s, OWNER_OFFERED);
}

static bool types_have_id(const VfioKind *kind, char *const *types, unsigned id, const char **ret) {
        char name[NAME_STRING_MAX];

        snprintf(name, sizeof name, "%s%u", kind->prefix, id);
        for (char *const *t = types; *t; t++)
                if (streq(*t, name)) {
                        *ret = *t;
                        return true;
                }
        return false;
}

/* Can prefer have one of types? 1 and *ret filled, 0 not. */
static int try_prefer(const VfioKind *kind, int rootfd, int ledgerfd, const char *boot_id, const char *guest, char *const *types,
                      const char *prefer, VgpuChoice *ret) {
        _cleanup_free_ VfioType *cr = NULL;
        size_t n_cr = 0;
        unsigned current;
        const char *t;
        int r;

        if (!prefer || !prefer[0] || vfio_is_vf(kind, rootfd, prefer) <= 0)
                return 0;
        r = vf_held(ledgerfd, boot_id, guest, prefer, NULL);
        if (r != 0)
                return r < 0 ? r : 0;
        if (vfio_vf_current(kind, rootfd, prefer, &current) < 0)
                return 0;
        *ret = (VgpuChoice) { .program = current == 0 };
        snprintf(ret->vf, sizeof ret->vf, "%s", prefer);
        if (vfio_vf_pf(rootfd, prefer, ret->pf) < 0)
                return 0;
        if (current) {
                if (!types_have_id(kind, types, current, &t))
                        return 0;
                ret->id = current;
                snprintf(ret->type, sizeof ret->type, "%s", t);
                return 1;
        }
        if (vfio_vf_creatable(kind, rootfd, prefer, &cr, &n_cr) < 0)
                return 0;
        for (char *const *w = types; *w; w++)
                for (size_t k = 0; k < n_cr; k++)
                        if (streq(cr[k].type, *w)) {
                                ret->id = cr[k].id;
                                snprintf(ret->type, sizeof ret->type, "%s", *w);
                                return 1;
                        }
        return 0;
}

/* The PFs of one type: device_addresses, or for the default type every VFIO
 * PF that no other type names. */
static int type_pfs(const VfioKind *kind, int rootfd, const Config *c, const char *type, char ***ret) {
        const ConfigType *t = config_find_type(c, type);
        _cleanup_strv_free_ char **all = NULL, **l = NULL;
        int r;

        if (t && t->addresses && t->addresses[0]) {
                for (char **a = t->addresses; *a; a++) {
                        r = strv_extend(&l, *a);
                        if (r < 0)
                                return r;
                }
        } else if (t && c->default_type == t) {
                r = vfio_pf_list(kind, rootfd, &all);
                if (r < 0)
                        return r;
                for (char **a = all; *a; a++)
                        if (!config_parent_is_listed(c, *a)) {
                                r = strv_extend(&l, *a);
                                if (r < 0)
                                        return r;
                        }
        }
        *ret = steal_pointer(&l);
        return 0;
}

/* The placement engine's order (place.h), with a PF's unprogrammed VFs as
 * its room. */
static int stat_cmp(const void *x, const void *y, void *userdata) {
        const PfStat *s = x, *t = y;
        PlaceKey a = { .parent = s->pf, .order = s->order, .room = s->nvfs - s->of_type - s->other, .near = s->near };
        PlaceKey b = { .parent = t->pf, .order = t->order, .room = t->nvfs - t->of_type - t->other, .near = t->near };

        return place_cmp(&a, &b, *(const ConfigPlacement *) userdata);
}

/* One vgpu_choose() call: what it reads with, and the PFs it has read. */
typedef struct Choose {
        const VfioKind *kind;
        int rootfd, ledgerfd;
        const Config *c;
        const char *boot_id, *guest;
        NodeSet wish;
        char (*taken)[PCI_ADDRESS_STRING_MAX];
        size_t n_taken;
        PfStat *st;
        size_t n_st, allocated;
} Choose;

/* Reads one PF's VFs for type (of ID id) into s. 1 when one of them is a
 * VF mdev-hooks kept programmed with the type and free (then *ret: the
 * first choice), 0 when not, -errno. */
static int pf_stat_read(Choose *ch, PfStat *s, const char *pf, const char *type, unsigned id, VgpuChoice *ret) {
        _cleanup_strv_free_ char **vfs = NULL;

        if (vfio_pf_vfs(ch->rootfd, pf, &vfs) < 0) {
                error_clear();
                snprintf(s->why, sizeof s->why, "%s has no VFs of NVIDIA's vGPU (run sriov-manage -e %s)", pf, pf);
                return 0;
        }
        for (char **vf = vfs; *vf; vf++) {
                LedgerEntry e = { .state = LEDGER_LOST };
                unsigned cur;
                int held;

                s->nvfs++;
                if (vfio_vf_current(ch->kind, ch->rootfd, *vf, &cur) < 0) {
                        error_clear();
                        continue;
                }
                if (cur == id)
                        s->of_type++;
                else if (cur)
                        s->other++;
                held = vf_held(ch->ledgerfd, ch->boot_id, ch->guest, *vf, &e);
                if (held < 0)
                        return held;
                if (held || taken_has(ch->taken, ch->n_taken, *vf))
                        continue;
                /* a VF mdev-hooks kept programmed and free: first choice */
                if (cur == id && ch->ledgerfd >= 0 && e.state == LEDGER_FREE && e.origin == LEDGER_CREATED &&
                    streq(e.boot_id, ch->boot_id) && streq(e.uuid, *vf) && !ret->kept && (!ch->wish || s->near)) {
                        *ret = (VgpuChoice) { .id = id, .program = false, .kept = true };
                        snprintf(ret->vf, sizeof ret->vf, "%s", *vf);
                        snprintf(ret->pf, sizeof ret->pf, "%.12s", pf);
                        snprintf(ret->type, sizeof ret->type, "%s", type);
                        return 1;
                }
                if (cur == 0 && !s->free_vf[0])
                        snprintf(s->free_vf, sizeof s->free_vf, "%s", *vf);
        }
        return 0;
}

/* max_instances, by the placement engine's rule (place.h): the type's
 * inventory over its PFs just read (ch->st[first..]), each with its offer
 * and with the VFs this call has chosen counted as made on their PF. A PF
 * without free capacity there is marked. */
static int type_cap(Choose *ch, const ConfigType *ct, size_t first) {
        size_t n = ch->n_st - first;
        _cleanup_free_ InventoryParent *inv = calloc(n + 1, sizeof *inv);
        int r;

        if (!inv)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const PfStat *s = &ch->st[first + i];
                VfioOffer o;
                bool offered;

                r = vfio_pf_offer(ch->kind, ch->rootfd, s->pf, ct->name, &o, &offered);
                if (r < 0) {
                        error_clear();
                        o = (VfioOffer) { .existing = s->of_type };
                        offered = false;
                }
                inv[i] = (InventoryParent) { .parent = s->pf, .type = ct->name, .max_instances = ct->max_instances,
                                             .offered = offered, .existing = o.existing, .available = o.creatable };
        }
        inventory_sort(inv, n);
        for (size_t k = 0; k < ch->n_taken; k++) {
                char pf[PCI_ADDRESS_STRING_MAX];
                InventoryParent *ip;

                if (vfio_vf_pf(ch->rootfd, ch->taken[k], pf) < 0) {
                        error_clear();
                        continue;
                }
                ip = inventory_find(inv, n, pf);
                if (ip)
                        ip->existing++;
        }
        inventory_compute(inv, n);
        for (size_t i = first; i < ch->n_st; i++) {
                PfStat *s = &ch->st[i];

                if (!s->why[0] && place_over_max(inv, n, s->pf))
                        snprintf(s->why, sizeof s->why, "%s: %s has reached max_instances = %u on this host", s->pf,
                                 ct->name, ct->max_instances);
        }
        return 0;
}

/* Reads the PFs of the type types[order] into ch->st, and marks those that
 * max_instances leaves no room on. 1, 0, -errno as pf_stat_read(). */
static int type_stats_read(Choose *ch, char *const *types, unsigned order, VgpuChoice *ret) {
        const char *type = types[order];
        const ConfigType *ct = config_find_type(ch->c, type);
        _cleanup_strv_free_ char **pfs = NULL;
        size_t first = ch->n_st;
        unsigned id;
        int r;

        if (vfio_kind_type_id(ch->kind, type, &id) < 0)
                return 0;
        r = type_pfs(ch->kind, ch->rootfd, ch->c, type, &pfs);
        if (r < 0)
                return r;
        for (char **pf = pfs; pf && *pf; pf++) {
                PfStat *s;

                if (array_grow(&ch->st, ch->n_st, &ch->allocated, sizeof *ch->st) < 0)
                        return -ENOMEM;
                s = &ch->st[ch->n_st++];
                *s = (PfStat) { .type = type, .order = order };
                snprintf(s->pf, sizeof s->pf, "%.12s", *pf);
                s->near = place_near(ch->rootfd, ch->wish, s->pf);
                r = pf_stat_read(ch, s, *pf, type, id, ret);
                if (r != 0)
                        return r;
        }
        if (ct && ct->max_instances)
                return type_cap(ch, ct, first);
        return 0;
}

/* Whether the PF of s can take its type on its free VF: 1 and *ret, or 0
 * and s->why says why not. */
static int pf_stat_take(Choose *ch, PfStat *s, VgpuChoice *ret) {
        _cleanup_free_ VfioType *cr = NULL;
        size_t n_cr = 0;

        if (!s->why[0] && !s->free_vf[0])
                snprintf(s->why, sizeof s->why, "%s has no free VF (%u of %u carry a vGPU)", s->pf,
                         s->of_type + s->other, s->nvfs);
        if (s->why[0] || vfio_vf_creatable(ch->kind, ch->rootfd, s->free_vf, &cr, &n_cr) < 0)
                return 0;
        for (size_t k = 0; k < n_cr; k++)
                if (streq(cr[k].type, s->type)) {
                        *ret = (VgpuChoice) { .id = cr[k].id, .program = true };
                        snprintf(ret->vf, sizeof ret->vf, "%s", s->free_vf);
                        snprintf(ret->pf, sizeof ret->pf, "%s", s->pf);
                        snprintf(ret->type, sizeof ret->type, "%s", s->type);
                        return 1;
                }
        if (s->other)
                snprintf(s->why, sizeof s->why, "%s cannot take %s (it holds vGPUs of another size, or is full)",
                         s->pf, s->type);
        else
                snprintf(s->why, sizeof s->why, "%s cannot take %s now (full)", s->pf, s->type);
        return 0;
}

int vgpu_choose(const VfioKind *kind, int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *guest,
                NodeSet wish, char *const *types, const char *prefer, char (*taken)[PCI_ADDRESS_STRING_MAX],
                size_t n_taken, VgpuChoice *ret) {
        Choose ch = { .kind = kind, .rootfd = rootfd, .ledgerfd = ledgerfd, .c = c, .boot_id = boot_id,
                      .guest = guest, .wish = wish, .taken = taken, .n_taken = n_taken };
        _cleanup_free_ PfStat *st = NULL;
        VgpuChoice far = { .vf = "" }; /* the incoming address, far from the guest's nodes */
        char why[2048] = "";
        size_t o = 0;
        int r;

        r = try_prefer(kind, rootfd, ledgerfd, boot_id, guest, types, prefer, ret);
        if (r < 0)
                return r;
        /* the incoming address, unless chosen already; when far from the
         * guest's nodes, only if no PF near them can take one */
        if (r > 0 && !taken_has(taken, n_taken, ret->vf)) {
                if (!wish || place_near(rootfd, wish, ret->pf))
                        return 0;
                far = *ret;
        }

        for (unsigned order = 0; types[order]; order++) {
                r = type_stats_read(&ch, types, order, ret);
                st = ch.st; /* freed on every way out */
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        if (ch.n_st > 1)
                qsort_r(st, ch.n_st, sizeof *st, stat_cmp, (void *) &c->placement);
        for (size_t i = 0; i < ch.n_st; i++) {
                PfStat *s = &st[i];

                if (far.vf[0] && !s->near)
                        break; /* nothing near: the incoming address as it is */
                if (pf_stat_take(&ch, s, ret) > 0)
                        return 0;
                error_clear();
                if (o < sizeof why) {
                        int k = snprintf(why + o, sizeof why - o, "%s%s", o ? ", " : "", s->why[0] ? s->why : s->pf);
                        if (k > 0)
                                o += (size_t) k;
                }
        }
        if (far.vf[0]) {
                *ret = far;
                return 0;
        }
        if (ch.n_st == 0)
                return error_set(-ENOSPC, "no GPU is configured for %s here (name its PFs in [mdev_%s] device_addresses)",
                                 types[0], types[0]);
        return error_set(-ENOSPC, "no VF for %s: %s", types[0], why);
}

/* Whether the <mh:vgpu> entry of a hostdev whose device here is not k's VF
 * (the source host's address, on a migrate) is k's to place: no backend's
 * device is at that address here, and its type is one of k's names. An
 * entry without a type (by class, or by nothing), or with a type that is
 * no backend's, is NVIDIA's, as it always was (its type is then refused
 * with the reason). */
static bool meta_is_kinds(const VfioKind *kind, int rootfd, const DomxmlVgpu *v) {
        const Backend *b;
        unsigned id;

        if (backend_of_device(rootfd, v->pci))
                return false;
        if (v->type[0] && vfio_kind_type_id(kind, v->type, &id) >= 0)
                return true;
        if (kind != &vfio_nvidia)
                return false;
        BACKEND_FOREACH(b)
                if (v->type[0] && b->type_is_mine && b->type_is_mine(v->type))
                        return false;
        return true;
}

int vgpu_migrate(HookContext *ctx, VgpuPlan *p) {
        Domxml *dom = ctx->dom;
        _cleanup_free_ char (*taken)[PCI_ADDRESS_STRING_MAX] = NULL;
        int r;

        p->items = calloc(dom->n_vgpus + 1, sizeof *p->items);
        taken = calloc(dom->n_vgpus + 1, sizeof *taken);
        if (!p->items || !taken)
                return -ENOMEM;
        p->n = 0;
        for (size_t i = 0; i < dom->n_vgpus; i++) {
                const DomxmlVgpu *v = &dom->vgpus[i];
                _cleanup_strv_free_ char **types = NULL;
                VgpuItem *it = &p->items[p->n];
                VgpuChoice ch = { .kept = false };
                char pf[PCI_ADDRESS_STRING_MAX] = "";
                unsigned current = 0;
                int is_vf;

                is_vf = vfio_is_vf(p->kind, ctx->rootfd, v->pci);
                if (is_vf < 0)
                        return is_vf;
                if (!v->has_meta && (v->managed || !is_vf))
                        continue; /* an ordinary PCI device (or one we cannot tell): left as it is */
                if (!is_vf && !meta_is_kinds(p->kind, ctx->rootfd, v))
                        continue; /* another backend's */
                if (is_vf && vfio_vf_pf(ctx->rootfd, v->pci, pf) < 0)
                        pf[0] = '\0';
                r = vgpu_want_types(p->kind, ctx->config, v, pf[0] ? pf : NULL, current, &types);
                if (r < 0)
                        return r;
                r = vgpu_choose(p->kind, ctx->rootfd, ctx->ledgerfd, ctx->config, ctx->boot_id, ctx->guest,
                                dom->numa_nodes, types, v->pci, taken, p->n, &ch);
                if (r < 0)
                        return error_prefix(r, "vGPU %s", v->pci);
                *it = (VgpuItem) { .index = i, .id = ch.id, .program = ch.program };
                memcpy(it->vf, ch.vf, sizeof it->vf);
                memcpy(it->pf, ch.pf, sizeof it->pf);
                snprintf(it->type, sizeof it->type, "%s", ch.type);
                memcpy(taken[p->n], ch.vf, sizeof taken[p->n]);
                p->n++;
        }
        return vgpu_migrate_apply(ctx, p, "vGPU");
}

int vgpu_migrate_apply(HookContext *ctx, VgpuPlan *p, const char *noun) {
        Domxml *dom = ctx->dom;
        int r;

        if (p->n == 0)
                return 0;
        r = vgpu_prepare_apply(ctx, p, LEDGER_INCOMING); /* undoes its own on failure */
        if (r < 0)
                return r;
        for (size_t k = 0; k < p->n; k++) {
                const VgpuItem *it = &p->items[k];

                if (streq(dom->vgpus[it->index].pci, it->vf))
                        continue;
                log_info("%s %s -> %s (%s on %s)", noun, dom->vgpus[it->index].pci, it->vf, it->type, it->pf);
                r = domxml_set_vgpu_pci(dom, it->index, it->vf);
                if (r < 0) {
                        ErrorSaved why;
                        int k2;

                        error_save(&why);
                        k2 = vgpu_rollback(ctx, p);
                        if (k2 < 0)
                                log_warning("rollback left something behind: %s", error_get(k2));
                        return error_restore(r, &why);
                }
                ctx->rewritten = true;
        }
        return 0;
}
