/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hook's operations on vGPUs of NVIDIA's vendor-specific VFIO framework
 * (vfio.h): a guest's <hostdev type='pci' managed='no'> on a VF, with its
 * <mh:vgpu pci= type=|class=> metadata entry (domxml.h). Called by
 * hook_prepare()/hook_release() (hook.c) and migrate_run() (migrate.c), under
 * the host-wide lock, with the same record as mdevs: the record's key is the
 * VF's PCI address, its parent the PF; states and origins are those of mdevs.
 *
 * Which PCI hostdevs are vGPUs: those with an <mh:vgpu> entry (the device
 * must then be such a VF), and those without one whose device is such a VF
 * (one stat each); any other PCI hostdev is an ordinary passthrough device
 * and is left alone.
 *
 * prepare, per vGPU: a VF without a vGPU whose creatable_vgpu_types lists
 * the type is programmed (origin created); a VF that carries the type and
 * that no other guest holds is borrowed (or reused, when mdev-hooks
 * programmed it: release = keep). Refused in one line: a VF another guest
 * holds, one carrying another type, a type not creatable there (naming what
 * is). The type: the entry's type=, its class= (any enabled nvidia-<ID> type
 * of that class), else the config's type for the VF's PF, else the type the
 * VF already carries.
 *
 * Crash safety: alloc.c's rule, with "program the VF" for "create" and
 * "clear it" for "remove".
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "hook.h"
#include "ledger.h"
#include "nodeset.h"
#include "vfio.h"

typedef struct VgpuItem {
        size_t index;                 /* in dom->vgpus */
        char vf[PCI_ADDRESS_STRING_MAX];
        char pf[PCI_ADDRESS_STRING_MAX];
        char type[NAME_STRING_MAX];   /* the type it gets or carries */
        unsigned id;
        bool program;                 /* 1: write id; 0: it carries the type already */
        /* undo */
        bool done;                    /* this call wrote its record (and programmed it, if program) */
        bool had_record;
        LedgerEntry prev;
} VgpuItem;

typedef struct VgpuPlan {
        const VfioKind *kind;         /* whose VFs */
        VgpuItem *items;
        size_t n;
} VgpuPlan;

void vgpu_plan_done(VgpuPlan *p);

/* Whether the domain may hold a vGPU at all (a PCI hostdev with an
 * <mh:vgpu> entry or managed='no'): without one, a hook has nothing to do. */
bool vgpu_dom_may_have(const Domxml *d);

/* Whether PCI hostdev i of the domain is a vGPU of kind k: 1 yes, 0 an
 * ordinary PCI device or another backend's, <0 an error (an <mh:vgpu> entry
 * on a device that is no backend's VF, with a message). */
int vgpu_is_ours(const VfioKind *k, int rootfd, const DomxmlVgpu *v);

/* Read only: resolves each vGPU's type and checks that it can be had.
 * -errno with a one-line reason, nothing changed. */
int vgpu_prepare_check(HookContext *ctx, VgpuPlan *p, LedgerState state);
/* Programs or claims each planned vGPU and writes its record; on failure
 * undoes its own work (vgpu_rollback()) and returns the reason. */
int vgpu_prepare_apply(HookContext *ctx, VgpuPlan *p, LedgerState state);
/* Undoes what vgpu_prepare_apply() did: clears what it programmed, puts the
 * records back. Best effort, returns the first error. */
int vgpu_rollback(HookContext *ctx, VgpuPlan *p);

/* reconnect: re-asserts the running guest's claims on its VFs (each must
 * carry its type already; nothing is programmed). Never fatal: returns the
 * first problem, which the caller logs. */
int vgpu_reconnect(const VfioKind *k, HookContext *ctx);

/* release: frees one record keyed by a VF (ledger_key_is_vf()). As
 * release_one() for mdevs: a record of an earlier boot or whose VF no
 * longer carries the type is forgotten; a borrowed one is forgotten; with
 * release = keep it stays programmed and free; else the VF is cleared (a
 * busy clear is retried a little, then marked remove_pending). */
int vgpu_release_one(HookContext *ctx, LedgerEntry *e, unsigned timeout_msec);
/* The same for a kind of VF, with its words and its clear. */
int vgpu_kind_release_one(const VfioKind *k, const HookReleaseKind *words, HookContext *ctx, LedgerEntry *e,
                          unsigned timeout_msec);
/* How release words and clears a VF (hook_release_record()). */
extern const HookReleaseKind vgpu_release_kind;
/* Clears a VF that mdev-hooks programmed, retrying EPERM/EBUSY (a guest
 * still closing it) for up to timeout_msec. 0 when cleared or already clear. */
int vgpu_clear(int rootfd, const char *vf, unsigned timeout_msec);
/* The same for a kind of VF. */
int vgpu_kind_clear(const VfioKind *k, int rootfd, const char *vf, unsigned timeout_msec);
/* In MIG mode ([gpu_<PF>] mode = mig, pf the VF's PF): the VF's
 * gpu_instance_id and placement_id read back into e (has_placement), once
 * it carries its vGPU. Best effort: a VF that does not say leaves e without
 * them, with a warning logged. */
void vgpu_record_placement(const Config *c, int rootfd, const VfioKind *k, const char *vf, const char *pf, LedgerEntry *e);

/* The types acceptable for a vGPU (for migrate and pick): entry type=,
 * class=, the config's type of pf (may be NULL), else current (0: none).
 * -ENOENT with a message when nothing applies. */
int vgpu_want_types(const VfioKind *k, const Config *c, const DomxmlVgpu *v, const char *pf, unsigned current, char ***ret);

/* --- placement (vgpu-place.c): migrate/restore and `mdev-hooks pick` ---- */

typedef struct VgpuChoice {
        char vf[PCI_ADDRESS_STRING_MAX];
        char pf[PCI_ADDRESS_STRING_MAX];
        char type[NAME_STRING_MAX];
        unsigned id;
        bool program;  /* the VF has no vGPU: write id; else it carries the type */
        bool kept;     /* a free VF mdev-hooks kept programmed (release = keep) */
} VgpuChoice;

/* Chooses a VF for one of types (config order) as the hook would: prefer
 * (may be NULL or "") if it is a VF here that can have the type and no other
 * guest holds it (with a wish and on a PF far from it: only when no PF near
 * it can take one); else a VF kept free
 * with the type (release = keep; with a wish, only on a PF near it); else
 * an unprogrammed VF whose creatable list has the type, on the PFs the
 * config gives the type (device_addresses; a default type: every VFIO PF
 * not named elsewhere), ordered by placement (place.h: the PFs on a NUMA
 * node of wish first, 0: no wish; pack: the PF holding most vGPUs of the
 * type first; spread: fewest; ties by name), honouring
 * max_instances across the host. taken: VFs already chosen by this call.
 * guest: whose claims count as its own (may be NULL). -ENOSPC with a message
 * naming every PF and why when nothing fits. */
int vgpu_choose(const VfioKind *k, int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *guest,
                NodeSet wish, char *const *types, const char *prefer, char (*taken)[PCI_ADDRESS_STRING_MAX], size_t n_taken,
                VgpuChoice *ret);

/* migrate begin / restore begin for the domain's vGPUs: for each, a VF here
 * (vgpu_choose(), preferring the incoming address), programmed or claimed as
 * incoming, and the hostdev's source address and metadata rewritten where
 * the VF differs (ctx->rewritten). On failure everything this call did is
 * undone (p) and the XML is left as it came. The caller commits or, when
 * something after it fails, calls vgpu_rollback(). */
int vgpu_migrate(HookContext *ctx, VgpuPlan *p);
/* The end of a migrate's plan, for every kind of VF: claims the plan's VFs
 * as incoming (vgpu_prepare_apply()) and rewrites each hostdev whose VF
 * differs (ctx->rewritten; noun names it in the log); on a failure, undoes
 * it all and returns the reason. */
int vgpu_migrate_apply(HookContext *ctx, VgpuPlan *p, const char *noun);
