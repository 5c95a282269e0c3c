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
 * (place.h), and migrate and restore are refused in one line.
 */
#pragma once

#include "backend.h"
#include "vfio.h"

typedef struct WholeKind {
        const VfioKind *kind;
        const char *noun;     /* "AMD MxGPU VF": in messages */
        const char *size;     /* what gives a VF its type: "its GPU's partition" */
        const char *fix;      /* how an operator gives a VF another type */
        const char *unset;    /* why a VF without a type has none, and what to do */
        const char *why_no_migrate;
} WholeKind;

/* 1 if the VF is bound to a VFIO driver now (vfio-pci, xe-vfio-pci): a
 * guest's, or being given to one. */
int whole_vf_bound(int rootfd, const char *vf);
/* The type on parent: existing, its VFs bound to a VFIO driver; available,
 * the others. */
int whole_parent_offer(const WholeKind *w, int rootfd, const char *parent, const char *type, BackendOffer *ret,
                       bool *ret_offered);
int whole_pick(const WholeKind *w, int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type,
               SysfsMdev *ret);
/* release's remove: nothing to undo on the device. */
int whole_forget(int rootfd, const char *vf, unsigned timeout_msec);

int whole_txn_new(const WholeKind *w, HookContext *ctx, HookOp op, void **ret);
int whole_txn_check(void *t);
int whole_txn_apply(void *t);
int whole_txn_rollback(void *t);
void whole_txn_commit(void *t);
void whole_txn_free(void *t);
