/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What every backend of VFs that carry a vGPU through attributes of their
 * own (a VfioKind, vfio.h: NVIDIA's vendor-specific VFIO framework, and any
 * other kind built the same way) does alike, for its table (backend.h): a
 * device is a VF carrying a type, its record keyed by the VF's address, its
 * parent the PF, its guest XML a <hostdev type='pci' managed='no'> with an
 * <mh:vgpu pci= type=> entry. The hook's side is vgpu.c, placement
 * vgpu-place.c. Such a backend's file holds its VfioKind, its release words
 * and one-line wrappers of these into its table (backend-vfio.c).
 */
#pragma once

#include "backend.h"
#include "vfio.h"

bool vf_key_is_mine(const char *key);
int vf_parent_offer(const VfioKind *k, int rootfd, const char *parent, const char *type, BackendOffer *ret,
                    bool *ret_offered);
int vf_parent_types(const VfioKind *k, int rootfd, const char *pf, SysfsType **ret, size_t *ret_n);
int vf_device_get(const VfioKind *k, int rootfd, const char *key, SysfsMdev *ret);
bool vf_type_is_mine(const VfioKind *k, const char *type);
int vf_pick(const VfioKind *k, int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type, NodeSet wish,
            SysfsMdev *ret);
bool vf_dom_has(const Domxml *d);

/* attach: whether every type asked for is one of k's and the host has PFs
 * of k; VFs chosen as `mdev-hooks pick` chooses, within --parent. */
bool vf_attach_serves(const VfioKind *k, const AttachChoosing *ch);
/* What one attach_choose() call may not choose: the VFs of the guest's XML,
 * those other guests' definitions name (ch->req->avoid), and those it chose
 * (vf_taken_add()); vf: room for all of them, freed by the caller. */
typedef struct VfTaken {
        char (*vf)[PCI_ADDRESS_STRING_MAX];
        size_t n;
} VfTaken;
int vf_taken_init(const AttachChoosing *ch, VfTaken *t);
void vf_taken_add(VfTaken *t, const char *pci);
int vf_attach_choose(const VfioKind *k, const AttachChoosing *ch, AttachDevice *out);

/* The hook's transaction (vgpu.c's plan), for the kind k. */
int vf_txn_new(const VfioKind *k, HookContext *ctx, HookOp op, void **ret);
int vf_txn_check(void *t);
int vf_txn_apply(void *t);
int vf_txn_rollback(void *t);
void vf_txn_commit(void *t);
void vf_txn_free(void *t);
/* reconnect, logging what fails. */
int vf_reconnect(const VfioKind *k, HookContext *ctx);
