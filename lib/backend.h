/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One interface for every kind of virtual GPU mdev-hooks makes, reuses and
 * frees: a backend is a table of operations (as kmod's and the kernel's
 * are), and the hook, migrate, the udev helper, reconcile, the inventory
 * and the CLI go through the table instead of calling sysfs_mdev_*() or
 * vfio_*() themselves.
 *
 *   backend           a device is                 its record's key   its guest XML
 *   mdev              an mdev of a parent          the mdev's UUID    <hostdev type='mdev'>
 *                     (backend-mdev.c)                                 + <mh:mdev uuid= type=>
 *   nvidia-vfio       a VF of NVIDIA's vendor      the VF's PCI       <hostdev type='pci'
 *                     VFIO framework carrying a    address            managed='no'>
 *                     vGPU (backend-vfio.c)                            + <mh:vgpu pci= type=>
 *
 * What a backend gives:
 *
 *   - discovery: its parents on the host (the GPUs), and what one offers
 *     now (parent_list, parent_is, parent_offer: the inventory's numbers,
 *     which inventory.c caps by max_instances as Nova does);
 *   - its devices as they are now, for list, metrics, the udev helper and
 *     reconcile (device_append, device_get), and what frees one (release);
 *   - the hook's work on a guest's devices of its kind: a transaction that
 *     checks (read only), claims or creates (program), and is committed or
 *     undone (txn_*), for prepare and for migrate/restore; reconnect; and
 *     the release of one of its records (release_one);
 *   - its record's key (key_is_mine, with type_is_mine); how the guest's
 *     XML names a device is the backend's own business, in its
 *     transaction (migrate's rewrite of a UUID or a VF's address).
 *
 * Every device's record is the same LedgerEntry (ledger.h), keyed by
 * key_is_mine()'s key, and every backend asks the one ownership rule
 * (owner.h) before it gives a device to a guest.
 *
 * Adding a backend: doc/design.md §7.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "attach.h"
#include "hook.h"
#include "ledger.h"
#include "sysfs.h"

/* What a parent offers of one type now. */
typedef struct BackendOffer {
        unsigned existing;  /* devices of the type on the parent */
        unsigned available; /* how many more it can make now (for VFs: an
                             * upper bound, exact when 0) */
} BackendOffer;

typedef struct Backend {
        const char *name;  /* "mdev", "nvidia-vfio" */
        const char *noun;  /* "mdev", "vGPU": in messages */

        /* --- the record ------------------------------------------------- */
        /* Whether a record's key can name one of this backend's devices
         * (a UUID; a PCI address). Which backend a record is: the one whose
         * key_is_mine() and type_is_mine() both say so, else the first
         * whose key_is_mine() does (backend_of_record()). */
        bool (*key_is_mine)(const char *key);

        /* --- discovery -------------------------------------------------- */
        /* Every parent of this kind on the host, sorted (a scan: for the
         * CLI, the inventory and a config without device_addresses). */
        int (*parent_list)(int rootfd, char ***ret);
        /* 1 if name is a parent of this kind now, 0 if not, -errno. */
        int (*parent_is)(int rootfd, const char *name);
        /* The offer of type on parent; *ret_offered false and zeros when
         * the parent does not offer it. */
        int (*parent_offer)(int rootfd, const char *parent, const char *type, BackendOffer *ret, bool *ret_offered);
        /* Every type the parent offers, described (`mdev-hooks types`).
         * 0, or 1 when some could not be read (each logged, the rest
         * returned); -errno when none could. */
        int (*parent_types)(int rootfd, const char *parent, SysfsType **ret, size_t *ret_n);
        /* check-config: what is wrong with the config's naming parent for
         * type, as one line in *ret_problem (NULL: nothing). 1 when parent
         * is this backend's to judge, 0 when it is not (another backend's,
         * or nobody's), -errno. NULL: the caller judges mdev parents. */
        int (*parent_check)(int rootfd, const char *parent, const char *type, char **ret_problem);

        /* --- devices ---------------------------------------------------- */
        /* Appends every device of this kind to *l (n of them) as a SysfsMdev
         * (uuid: the record's key), and leaves the list sorted by key. */
        int (*device_append)(int rootfd, SysfsMdev **l, size_t *n);
        /* The device of key as it is now. -ENOENT: there is none (or it
         * carries nothing). */
        int (*device_get)(int rootfd, const char *key, SysfsMdev *ret);
        /* 1 if the device name (an event's, a hostdev's) is one of this
         * backend's (whether or not it carries anything now), 0 if not. */
        int (*device_is)(int rootfd, const char *name);
        /* How release frees a device: the words, and the remove or clear
         * (retried while busy for up to timeout_msec). */
        const HookReleaseKind *release;
        /* The driver says EPERM where it means "in use" (NVIDIA's does). */
        bool eperm_is_busy;
        /* Makes the device of key again, as it was recorded (recreate =
         * eager: the udev helper when an mdev parent registers, `gpu plan`
         * when a GPU is in its declared state); the raw -errno of the
         * write. NULL: this kind is made again when its guest starts. */
        int (*device_make)(int rootfd, const char *parent, const char *type, const char *key);
        /* What a record keeps of a device beyond its key and type, read
         * after the device was made (NVIDIA's MIG mode: the GPU instance
         * the driver chose). NULL: nothing. */
        void (*device_record)(const Config *c, int rootfd, LedgerEntry *e);

        /* Whether type is one of this backend's type names (nvidia-<ID>). */
        bool (*type_is_mine)(const char *type);
        /* `mdev-hooks pick TYPE`: the device the hook would give a guest
         * that asks for type now (the key, its parent, the type), chosen
         * as placement chooses, near the NUMA nodes of wish first (0: no
         * wish; place.h); -ENOSPC with a message when none fits.
         * NULL: this backend's devices are chosen when the guest starts. */
        int (*pick)(int rootfd, int ledgerfd, const Config *c, const char *boot_id, const char *type, NodeSet wish,
                    SysfsMdev *ret);
        /* Its VFs go to the guest through libvirt's binding to vfio-pci
         * (<hostdev type='pci' managed='yes'>: AMD's, Intel's), not bound
         * by their driver as they are (managed='no': NVIDIA's). */
        bool managed;

        /* --- the guest -------------------------------------------------- */
        /* Whether the domain may hold devices of this kind at all. */
        bool (*dom_has)(const Domxml *d);
        /* A transaction for prepare (HOOK_OP_PREPARE) or migrate and
         * restore: txn_check() reads only and refuses with the reason;
         * txn_apply() claims, creates or programs, writes the records and,
         * for migrate, rewrites the XML (ctx->rewritten); txn_rollback()
         * undoes what apply did (best effort, the first error); txn_commit()
         * keeps it. txn_free() after either. */
        int (*txn_new)(HookContext *ctx, HookOp op, void **ret);
        int (*txn_check)(void *t);
        int (*txn_apply)(void *t);
        int (*txn_rollback)(void *t);
        void (*txn_commit)(void *t);
        void (*txn_free)(void *t);
        /* reconnect: re-asserts the running guest's claims; logs each
         * problem and returns the first. */
        int (*reconnect)(HookContext *ctx);
        /* release: frees one record of the guest (one of key_is_mine()). */
        int (*release_one)(HookContext *ctx, LedgerEntry *e, unsigned timeout_msec);

        /* --- attach ----------------------------------------------------- */
        /* `mdev-hooks attach`: whether a guest asking for ch->req's type or
         * class gets this backend's devices here. */
        bool (*attach_serves)(const AttachChoosing *ch);
        /* Chooses ch->req->count new devices for the guest, read only (the
         * guest claims them when it starts): out[0..count). -errno with a
         * one-line reason. */
        int (*attach_choose)(const AttachChoosing *ch, AttachDevice *out);
} Backend;

extern const Backend backend_mdev;
extern const Backend backend_nvidia_vfio;
extern const Backend backend_amd;
extern const Backend backend_xe;
#if MDEV_HOOKS_CRASHPOINTS
extern const Backend backend_fake; /* the test build's only */
#endif

/* Every backend, NULL-terminated, in the order the hook works on them (and
 * undoes in reverse). */
extern const Backend *const backends[];

#define BACKEND_FOREACH(b) for (const Backend *const *_bp = backends; ((b) = *_bp); _bp++)
/* How many there are: the size of an array with one slot per backend. */
#define BACKENDS_MAX 6

/* Every backend's parents, in the table's order (unsorted). */
int backend_parent_list(int rootfd, char ***ret);
/* The backend that parent is a parent of now: the last in the table that
 * says so (a GPU that is both an mdev parent and a PF of a VF backend is
 * read as the PF); NULL when none. */
const Backend *backend_of_parent(int rootfd, const char *parent);
/* The backend of the record of key with type (backend.h, key_is_mine());
 * NULL when none claims the key. */
const Backend *backend_of_record(const char *key, const char *type);
/* The backend one of whose devices name is (device_is()); NULL when none. */
const Backend *backend_of_device(int rootfd, const char *name);
/* Whether the domain may hold a device of any backend. */
bool backend_dom_has_any(const Domxml *d);

/* Every device of every backend, sorted by key (list, metrics, reconcile). */
int backend_device_list(int rootfd, SysfsMdev **ret, size_t *ret_n);
/* Frees the device of record e by its backend's release (reconcile): 0 when
 * gone (or it was), -EBUSY while in use, another -errno. */
int backend_device_remove(int rootfd, const LedgerEntry *e, unsigned timeout_msec);

/* The hook's transaction over every backend, in the table's order. */
typedef struct BackendRun {
        void *txn[BACKENDS_MAX];
} BackendRun;
/* txn_new() and txn_check() of each: -errno with the reason, nothing changed. */
int backend_run_check(BackendRun *run, HookContext *ctx, HookOp op);
/* txn_apply() of each, in order; stops at the first failure. */
int backend_run_apply(BackendRun *run);
/* txn_rollback() of each, in reverse order; each one that leaves something
 * behind is logged as a warning. The caller keeps its reason around it
 * (error_save()). */
void backend_run_rollback(BackendRun *run);
void backend_run_commit(BackendRun *run);
void backend_run_done(BackendRun *run);
