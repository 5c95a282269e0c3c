/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libvirt qemu hook's operations (doc/design.md §1), called by the worker
 * (hooks/) as `<guest> <op> <subop> <extra>` with the domain XML on stdin.
 *
 * The worker reads and parses the XML, loads the config, opens the record,
 * takes the host-wide lock and then calls one of the functions below with a
 * filled HookContext. They run under the lock and change sysfs and the record.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "alloc.h"
#include "config.h"
#include "domxml.h"
#include "hookop.h"
#include "util.h"

typedef struct HookContext {
        int rootfd;                  /* root_open() */
        int ledgerfd;                /* ledger_open() */
        const Config *config;
        Domxml *dom;                 /* parsed stdin */
        const char *guest;           /* argv[1]: the domain name */
        char boot_id[UUID_STRING_MAX];
        /* The host-wide lock (lock.h) the worker holds, -1 if none. prepare
         * lets go of it while it waits for a parent to register. */
        int lockfd;

        /* migrate/restore: the XML changed (domxml_set_mdev_uuid()) and is
         * to be printed (domxml_write()). */
        bool rewritten;
        /* prepare: its candidates' files, opened while it waited for the lock
         * (alloc_preopen()), or NULL. */
        const AllocOpened *opened;
} HookContext;

/* prepare begin: reuse or create every mdev of the guest, all or nothing.
 * On failure: -errno with a one-line reason via error_set(); nothing this call
 * created is left behind. */
int hook_prepare(HookContext *ctx);
/* release end: free the guest's mdevs. Never fails the caller's exit status;
 * returns <0 only to say something was left for later (logged by the caller). */
int hook_release(HookContext *ctx);
/* How release frees one kind of device (an mdev, a VF's vGPU): the words
 * of its messages and what removes it. */
typedef struct HookReleaseKind {
        const char *noun;       /* "mdev" */
        const char *kept;       /* "free": what release = keep leaves */
        const char *verb;       /* "remove" */
        const char *verb_noun;  /* "removal" */
        const char *done;       /* "removed" */
        const char *crashpoint; /* after the device is gone, before the record */
        int (*remove)(int rootfd, const char *key, unsigned timeout_msec);
} HookReleaseKind;
/* Frees the device of record E: forgets it when gone (PRESENT -ENOENT) or
 * borrowed, keeps it free under release = keep, else removes it and then its
 * record; a failed removal leaves the record free with remove_pending.
 * PRESENT: 0 the device is there, -ENOENT gone, another -errno to return. */
int hook_release_record(HookContext *ctx, LedgerEntry *e, const HookReleaseKind *k, int present,
                        unsigned timeout_msec);
/* Frees one record of the guest (an mdev or a VF's vGPU) as release frees
 * each (`mdev-hooks detach --live`, once the guest gave the device back),
 * and fsyncs the record's directory. <0 with the message when something is
 * left for later. */
int hook_release_one(HookContext *ctx, LedgerEntry *e);
/* reconnect begin: re-assert the guest's claims; the caller always exits 0. */
int hook_reconnect(HookContext *ctx);
/* migrate begin / restore begin (migrate.c): find or create local mdevs of the
 * same types, claim them as incoming, and set ctx->rewritten when the XML changed. */
int migrate_run(HookContext *ctx, HookOp op);
