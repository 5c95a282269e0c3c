/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the backends of VFs given whole do alike (backend-whole.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend-vf.h"
#include "backend-whole.h"
#include "error.h"
#include "log.h"
#include "owner.h"
#include "pcidev.h"
#include "place.h"

int whole_vf_bound(int rootfd, const char *vf) {
        char driver[NAME_STRING_MAX];

        if (pci_device_driver(rootfd, vf, driver) < 0)
                return 0;
        return streq(driver, "vfio-pci") || streq(driver, "xe-vfio-pci");
}

int whole_parent_offer(const WholeKind *w, int rootfd, const char *parent, const char *type, BackendOffer *ret,
                       bool *ret_offered) {
        _cleanup_strv_free_ char **vfs = NULL;
        unsigned id, cur, bound = 0, all = 0;

        *ret = (BackendOffer) { 0 };
        *ret_offered = false;
        if (vfio_kind_type_id(w->kind, type, &id) < 0 || vfio_pf_vfs(rootfd, parent, &vfs) < 0) {
                error_clear();
                return 0;
        }
        for (char **vf = vfs; *vf; vf++) {
                if (vfio_vf_current(w->kind, rootfd, *vf, &cur) < 0 || cur != id) {
                        error_clear();
                        continue;
                }
                all++;
                bound += whole_vf_bound(rootfd, *vf) > 0;
        }
        *ret = (BackendOffer) { .existing = bound, .available = all - bound };
        *ret_offered = all > 0;
        return 0;
}

int whole_forget(int rootfd, const char *vf, unsigned timeout_msec) {
        (void) rootfd, (void) vf, (void) timeout_msec;
        return 0; /* nothing of mdev-hooks' is on the VF */
}

/* --- choosing: a VF of the type nobody holds, placed as every backend's are */

typedef struct Candidate {
        char pf[PCI_ADDRESS_STRING_MAX];
        char vf[PCI_ADDRESS_STRING_MAX]; /* its first VF of the type nobody holds */
        unsigned room;                   /* its VFs of the type nobody holds */
        bool near;                       /* on a node the guest wishes (place_near()) */
} Candidate;

bool whole_want_taken(const WholeWant *want, const char *vf) {
        for (size_t i = 0; i < want->n_taken; i++)
                if (streq(want->taken[i], vf))
                        return true;
        return false;
}

static int pf_room(const WholeKind *w, int rootfd, int ledgerfd, const char *boot_id, const WholeWant *want,
                   const char *pf, unsigned id, Candidate *ret) {
        _cleanup_strv_free_ char **vfs = NULL;
        int r;

        *ret = (Candidate) { .room = 0 };
        snprintf(ret->pf, sizeof ret->pf, "%.12s", pf);
        if (vfio_pf_vfs(rootfd, pf, &vfs) < 0) {
                error_clear();
                return 0;
        }
        for (char **vf = vfs; *vf; vf++) {
                OwnerState s;
                unsigned cur;

                if (want->vf && !streq(*vf, want->vf))
                        continue;
                if (vfio_vf_current(w->kind, rootfd, *vf, &cur) < 0 || cur != id) {
                        error_clear();
                        continue;
                }
                r = owner_read(ledgerfd, *vf, boot_id, want->guest, &s, NULL);
                if (r < 0)
                        return r;
                if (!owner_may_give(s, OWNER_OFFERED) || whole_want_taken(want, *vf))
                        continue;
                if (ret->room++ == 0)
                        snprintf(ret->vf, sizeof ret->vf, "%.12s", *vf);
        }
        return 0;
}

static int candidate_cmp(const void *x, const void *y, void *userdata) {
        const Candidate *a = x, *b = y;
        PlaceKey ka = { .parent = a->pf, .room = a->room, .near = a->near };
        PlaceKey kb = { .parent = b->pf, .room = b->room, .near = b->near };

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

int whole_pf_migratable(const WholeKind *w, int rootfd, const char *pf, char **reterr_why) {
        if (!w->migratable) {
                *reterr_why = strdup(w->why_no_migrate);
                return *reterr_why ? 0 : -ENOMEM;
        }
        return w->migratable(rootfd, pf, reterr_why);
}

/* Keeps the candidates whose GPU's VFs can migrate; *ret_why: why the
 * first that cannot, cannot. */
static int candidates_migratable(const WholeKind *w, int rootfd, Candidate *l, size_t *n, char **ret_why) {
        size_t k = 0;
        int r;

        for (size_t i = 0; i < *n; i++) {
                _cleanup_free_ char *why = NULL;

                r = whole_pf_migratable(w, rootfd, l[i].pf, &why);
                if (r < 0)
                        return r;
                if (r > 0)
                        l[k++] = l[i];
                else if (!*ret_why)
                        *ret_why = steal_pointer(&why);
        }
        *n = k;
        return 0;
}

int whole_choose(const WholeKind *w, int rootfd, int ledgerfd, const Config *c, const char *boot_id,
                 const WholeWant *want, SysfsMdev *ret) {
        _cleanup_strv_free_ char **pfs = NULL;
        _cleanup_free_ Candidate *l = NULL;
        _cleanup_free_ char *why = NULL;
        size_t n = 0;
        unsigned id;
        int r;

        if (vfio_kind_type_id(w->kind, want->type, &id) < 0)
                return error_set(-EINVAL, "'%s' is not a type of %s (%s<N>)", want->type, w->kind->label, w->kind->prefix);
        r = vfio_pf_list(w->kind, rootfd, &pfs);
        if (r < 0)
                return r;
        l = calloc(strv_length(pfs) + 1, sizeof *l);
        if (!l)
                return -ENOMEM;
        for (char **pf = pfs; *pf; pf++) {
                if (!type_allows(c, want->type, *pf) || (want->pf && !streq(*pf, want->pf)))
                        continue;
                r = pf_room(w, rootfd, ledgerfd, boot_id, want, *pf, id, &l[n]);
                if (r < 0)
                        return r;
                if (l[n].room > 0)
                        l[n++].near = place_near(rootfd, want->wish, *pf);
        }
        if (want->migratable && (r = candidates_migratable(w, rootfd, l, &n, &why)) < 0)
                return r;
        if (n == 0 && why)
                return error_set(-ENOSPC, "no free %s of type %s here can migrate: %s; free one on a GPU whose VFs can, or migrate the guest to a host that has one",
                                 w->noun, want->type, why);
        if (n == 0)
                return error_set(-ENOSPC, "no free VF of type %s: no %s of that type here is free of guests (see mdev-hooks list)",
                                 want->type, w->noun);
        qsort_r(l, n, sizeof *l, candidate_cmp, (void *) &c->placement);
        *ret = (SysfsMdev) { .uuid = "" };
        snprintf(ret->uuid, sizeof ret->uuid, "%s", l[0].vf);
        snprintf(ret->parent, sizeof ret->parent, "%s", l[0].pf);
        snprintf(ret->type, sizeof ret->type, "%s", want->type);
        return 0;
}

int whole_pick(const WholeKind *w, int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type,
               NodeSet wish, SysfsMdev *ret) {
        WholeWant want = { .type = type, .wish = wish };

        return whole_choose(w, rootfd, ledgerfd, c, boot_id, &want, ret);
}

/* --- the guest ------------------------------------------------------------ */

/* The first of the domain's hostdevs that is one of w's VFs here, or that
 * its metadata gives one of w's types; NULL when none. */
static const DomxmlVgpu *dom_first(const WholeKind *w, const HookContext *ctx) {
        for (size_t i = 0; i < ctx->dom->n_vgpus; i++) {
                const DomxmlVgpu *v = &ctx->dom->vgpus[i];

                if (vf_type_is_mine(w->kind, v->type) || vfio_is_vf(w->kind, ctx->rootfd, v->pci) > 0)
                        return v;
        }
        return NULL;
}

/* Each of the domain's VFs of w: it has a type, and the one asked for. */
static int check_types(const WholeKind *w, const HookContext *ctx) {
        for (size_t i = 0; i < ctx->dom->n_vgpus; i++) {
                const DomxmlVgpu *v = &ctx->dom->vgpus[i];
                unsigned cur, want;
                int r;

                if (vfio_is_vf(w->kind, ctx->rootfd, v->pci) <= 0)
                        continue;
                r = vfio_vf_current(w->kind, ctx->rootfd, v->pci, &cur);
                if (r < 0)
                        return r;
                if (cur == 0)
                        return error_set(-ENOENT, "%s %s has no type: %s", w->noun, v->pci, w->unset);
                if (v->type[0] && !vf_type_is_mine(w->kind, v->type))
                        return error_set(-EMEDIUMTYPE, "VF %s is an %s (%s%u), but the domain asks for %s; fix the domain's metadata",
                                         v->pci, w->noun, w->kind->prefix, cur, v->type);
                if (v->type[0] && vfio_kind_type_id(w->kind, v->type, &want) >= 0 && want != cur)
                        return error_set(-EMEDIUMTYPE, "VF %s is %s%u (%s), but the domain asks for %s; give it a VF of that type (mdev-hooks pick %s) or fix the metadata (%s)",
                                         v->pci, w->kind->prefix, cur, w->size, v->type, v->type, w->fix);
        }
        return 0;
}

/* --- prepare: the scheduling profile a guest's entry asks of its VF ------- */

static bool sched_asked(const DomxmlSched *s) {
        return s->has_exec_quantum || s->has_preempt_timeout;
}

/* Read only: a kind without a scheduling profile refuses an entry that
 * asks for one. */
static int check_sched(const WholeKind *w, const HookContext *ctx) {
        for (size_t i = 0; i < ctx->dom->n_vgpus; i++) {
                const DomxmlVgpu *v = &ctx->dom->vgpus[i];

                if (!sched_asked(&v->sched) || w->sched_set || vfio_is_vf(w->kind, ctx->rootfd, v->pci) <= 0)
                        continue;
                return error_set(-EOPNOTSUPP, "VF %s is an %s, which has no scheduling profile: remove exec_quantum_ms= and preempt_timeout_us= from its <mh:vgpu> entry",
                                 v->pci, w->noun);
        }
        return 0;
}

/* What a VF's profile was before prepare wrote it. */
typedef struct SchedUndo {
        char vf[PCI_ADDRESS_STRING_MAX];
        DomxmlSched prev;
        bool done; /* written (perhaps in part): to be put back */
} SchedUndo;

typedef struct WholeTxn {
        const WholeKind *w;
        HookContext *ctx;
        HookOp op;
        void *vf;          /* backend-vf.c's, for prepare */
        SchedUndo *sched;  /* prepare: the profiles it wrote */
        size_t n_sched;
        VgpuPlan migrate;  /* for migrate and restore */
} WholeTxn;

/* Puts back each profile prepare changed, last first; the first error. */
static int sched_undo(WholeTxn *t) {
        int ret = 0;

        for (size_t i = t->n_sched; i-- > 0;) {
                SchedUndo *u = &t->sched[i];
                DomxmlSched cur, back = u->prev;
                int r;

                if (!u->done)
                        continue;
                /* a refused write changed nothing: write back only what differs */
                if (t->w->sched_get(t->ctx->rootfd, u->vf, &cur) >= 0) {
                        back.has_exec_quantum = cur.exec_quantum_ms != u->prev.exec_quantum_ms;
                        back.has_preempt_timeout = cur.preempt_timeout_us != u->prev.preempt_timeout_us;
                }
                error_clear();
                r = t->w->sched_set(t->ctx->rootfd, u->vf, &back);
                if (r < 0 && ret == 0)
                        ret = r;
                u->done = false;
        }
        return ret;
}

/* One line for a profile the driver refused: what, and what to change. */
static int sched_refused(const WholeTxn *t, const char *vf, int r) {
        _cleanup_free_ char *why = strdup(error_get(r));

        return error_set(r, "guest '%s' cannot have the scheduling profile it asks of %s %s: %s; fix or remove exec_quantum_ms= and preempt_timeout_us= in its <mh:vgpu> entry",
                         t->ctx->guest, t->w->noun, vf, why ? why : strerror(-r));
}

/* After the claims: each VF's profile as its entry asks, read back. The
 * caller undoes on failure (sched_undo()). */
static int sched_apply(WholeTxn *t) {
        const Domxml *dom = t->ctx->dom;
        int r;

        if (!t->w->sched_set)
                return 0;
        t->sched = calloc(dom->n_vgpus + 1, sizeof *t->sched);
        if (!t->sched)
                return -ENOMEM;
        for (size_t i = 0; i < dom->n_vgpus; i++) {
                const DomxmlVgpu *v = &dom->vgpus[i];
                SchedUndo *u;

                if (!sched_asked(&v->sched) || vfio_is_vf(t->w->kind, t->ctx->rootfd, v->pci) <= 0)
                        continue;
                u = &t->sched[t->n_sched++];
                snprintf(u->vf, sizeof u->vf, "%.12s", v->pci);
                r = t->w->sched_get(t->ctx->rootfd, v->pci, &u->prev);
                if (r < 0)
                        return sched_refused(t, v->pci, r);
                u->done = true; /* before the write: a write in part is put back too */
                r = t->w->sched_set(t->ctx->rootfd, v->pci, &v->sched);
                if (r < 0)
                        return sched_refused(t, v->pci, r);
                log_info("%s %s: scheduling profile as guest '%s' asks", t->w->noun, v->pci, t->ctx->guest);
        }
        return 0;
}

/* prepare's apply: the claims (vgpu.c), then the profiles; all or nothing. */
static int prepare_apply(WholeTxn *t) {
        ErrorSaved why;
        int r, k;

        r = vf_txn_apply(t->vf); /* undoes its own on failure */
        if (r < 0)
                return r;
        r = sched_apply(t);
        if (r >= 0)
                return 0;
        error_save(&why);
        k = sched_undo(t);
        if (k < 0)
                log_warning("a VF's scheduling profile could not be put back: %s", error_get(k));
        k = vf_txn_rollback(t->vf);
        if (k < 0)
                log_warning("rollback left something behind: %s", error_get(k));
        return error_restore(r, &why);
}

int whole_txn_new(const WholeKind *w, HookContext *ctx, HookOp op, void **ret) {
        WholeTxn *t = calloc(1, sizeof *t);
        int r;

        if (!t)
                return -ENOMEM;
        *t = (WholeTxn) { .w = w, .ctx = ctx, .op = op, .migrate = { .kind = w->kind } };
        r = vf_txn_new(w->kind, ctx, op, &t->vf);
        if (r < 0) {
                free(t);
                return r;
        }
        *ret = t;
        return 0;
}

int whole_txn_check(void *p) {
        WholeTxn *t = p;
        const DomxmlVgpu *v;
        int r;

        if (t->op != HOOK_OP_PREPARE && !t->w->migratable) {
                v = dom_first(t->w, t->ctx);
                if (!v)
                        return 0;
                return error_set(-EOPNOTSUPP, "guest '%s' holds %s %s, which cannot migrate or be restored (%s): shut it down and start it where it should run",
                                 t->ctx->guest, t->w->noun, v->pci, t->w->why_no_migrate);
        }
        if (t->op != HOOK_OP_PREPARE)
                return whole_migrate_check(t->w, t->ctx, &t->migrate);
        r = check_types(t->w, t->ctx);
        if (r >= 0)
                r = check_sched(t->w, t->ctx);
        if (r < 0)
                return r;
        return vf_txn_check(t->vf);
}

int whole_txn_apply(void *p) {
        WholeTxn *t = p;

        return t->op == HOOK_OP_PREPARE ? prepare_apply(t) : vgpu_migrate_apply(t->ctx, &t->migrate, "VF");
}

int whole_txn_rollback(void *p) {
        WholeTxn *t = p;
        int r, k;

        if (t->op != HOOK_OP_PREPARE)
                return vgpu_rollback(t->ctx, &t->migrate);
        r = t->n_sched ? sched_undo(t) : 0;
        k = vf_txn_rollback(t->vf);
        return r < 0 ? r : k;
}

void whole_txn_commit(void *p) {
        (void) p; /* the records are written */
}

void whole_txn_free(void *p) {
        WholeTxn *t = p;

        vf_txn_free(t->vf);
        free(t->sched);
        vgpu_plan_done(&t->migrate);
        free(t);
}
