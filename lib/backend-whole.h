/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the backends of VFs that a guest gets whole do alike (AMD's GIM VFs,
 * backend-amd.c; Intel's xe VFs, backend-xe.c): a VF's type is what its GPU
 * gave it (a partition, a VRAM quota), read through its VfioKind's
 * current_of() (vfio.h), and mdev-hooks programs nothing on it. The guest
 * names it with a <hostdev type='pci' managed='yes'> and an <mh:vgpu pci=
 * [type=]> entry; prepare checks the owner (owner.c) and the type and
 * records it as borrowed (vgpu.c's plan), release forgets the record, pick
 * chooses a VF of the type nobody holds by the one placement engine
 * (place.h). migrate and restore (backend-whole-migrate.c) choose a free
 * VF of the type on a GPU whose VFs can migrate (WholeKind.migratable:
 * Intel's through xe-vfio-pci), claim it as incoming and rewrite the
 * hostdev's address; a kind that cannot migrate (AMD's) is refused in one
 * line.
 */
#pragma once

#include "backend.h"
#include "vfio.h"
#include "vgpu.h"

typedef struct WholeKind {
        const VfioKind *kind;
        const char *noun;     /* "AMD MxGPU VF": in messages */
        const char *size;     /* what gives a VF its type: "its GPU's partition" */
        const char *fix;      /* how an operator gives a VF another type */
        const char *unset;    /* why a VF without a type has none, and what to do */
        const char *why_no_migrate; /* when migratable is NULL */
        /* 1 when the GPU pf's VFs can be live-migrated, 0 with *reterr_why
         * (one line) when not, -errno. NULL: this kind never migrates. */
        int (*migratable)(int rootfd, const char *pf, char **reterr_why);
        /* The scheduling profile a guest's <mh:vgpu> entry may ask of a VF
         * (DomxmlSched): read (for the undo), and written with each value
         * read back (-errno with one line). NULL: the kind has none, and
         * prepare refuses an entry that asks for one. */
        int (*sched_get)(int rootfd, const char *vf, DomxmlSched *ret);
        int (*sched_set)(int rootfd, const char *vf, const DomxmlSched *s);
} WholeKind;

/* What whole_choose() looks for: a VF of type that guest may have (NULL:
 * any guest's claim counts), none of taken, with migratable only on a GPU
 * whose VFs can migrate, and with pf or vf (attach's --parent) only that
 * GPU or that VF. */
typedef struct WholeWant {
        const char *type;
        NodeSet wish; /* the guest's NUMA nodes: GPUs there first (place.h); 0: none */
        const char *guest;
        char (*taken)[PCI_ADDRESS_STRING_MAX];
        size_t n_taken;
        bool migratable;
        const char *pf, *vf;
} WholeWant;

/* 1 if the VF is bound to a VFIO driver now (vfio-pci, xe-vfio-pci): a
 * guest's, or being given to one. */
int whole_vf_bound(int rootfd, const char *vf);
/* The type on parent: existing, its VFs bound to a VFIO driver; available,
 * the others. */
int whole_parent_offer(const WholeKind *w, int rootfd, const char *parent, const char *type, BackendOffer *ret,
                       bool *ret_offered);
/* Whether vf is one of want->taken. */
bool whole_want_taken(const WholeWant *want, const char *vf);
/* whole_pf_migratable(): w->migratable, or 0 with why_no_migrate. */
int whole_pf_migratable(const WholeKind *w, int rootfd, const char *pf, char **reterr_why);
/* The VF placement gives for want (key, PF, type in *ret); -ENOSPC with one
 * line when none fits (naming why a GPU cannot migrate, when that is why). */
int whole_choose(const WholeKind *w, int rootfd, int ledgerfd, const Config *c, const char *boot_id,
                 const WholeWant *want, SysfsMdev *ret);
int whole_pick(const WholeKind *w, int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type,
               NodeSet wish, SysfsMdev *ret);
/* attach (backend-whole-attach.c): a TYPE of w's, on a host with w's GPUs;
 * ch->req->count VFs chosen by whole_choose(), none the guest's XML or
 * another guest's definition names, each given as a managed hostdev. */
bool whole_attach_serves(const WholeKind *w, const AttachChoosing *ch);
int whole_attach_choose(const WholeKind *w, const AttachChoosing *ch, AttachDevice *out);
/* release's remove: nothing to undo on the device. */
int whole_forget(int rootfd, const char *vf, unsigned timeout_msec);

/* migrate begin / restore begin (backend-whole-migrate.c): for each of the
 * domain's VFs of w, a VF here (the incoming address when it is a free VF
 * of the type on a GPU that can migrate, else whole_choose()), read only;
 * vgpu_migrate_apply() then claims them as incoming and rewrites the
 * hostdevs' addresses where they differ, as for NVIDIA's VFs. */
int whole_migrate_check(const WholeKind *w, HookContext *ctx, VgpuPlan *p);

int whole_txn_new(const WholeKind *w, HookContext *ctx, HookOp op, void **ret);
int whole_txn_check(void *t);
int whole_txn_apply(void *t);
int whole_txn_rollback(void *t);
void whole_txn_commit(void *t);
void whole_txn_free(void *t);
