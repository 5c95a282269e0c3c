/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The mdev backend's inside (backend.h): its table is in backend-mdev.c,
 * prepare's work on a guest's mdevs in backend-mdev-prepare.c, migrate's
 * and restore's in backend-mdev-migrate.c. The choosing, claiming and
 * creating itself is alloc.c's.
 */
#pragma once

#include "alloc.h"
#include "attach.h"
#include "hook.h"

/* An Alloc for one hook call on ctx's guest, under ctx's lock. */
void mdev_alloc_init(const HookContext *ctx, Alloc *a);

/* prepare: check (read only: what exists, what is wanted, whether it may be
 * had), apply (claim what exists, create the rest), rollback, commit. */
typedef struct MdevPrepare MdevPrepare;
int mdev_prepare_new(HookContext *ctx, MdevPrepare **ret);
int mdev_prepare_check(MdevPrepare *p);
int mdev_prepare_apply(MdevPrepare *p);
int mdev_prepare_rollback(MdevPrepare *p);
void mdev_prepare_commit(MdevPrepare *p);
void mdev_prepare_free(MdevPrepare *p);

/* migrate and restore: check (every hostdev's type resolved, what exists
 * with its incoming UUID), apply (choose, claim, create, rewrite the XML),
 * rollback, commit (and log each choice). */
typedef struct MdevMigrate MdevMigrate;
int mdev_migrate_new(HookContext *ctx, HookOp op, MdevMigrate **ret);
int mdev_migrate_check(MdevMigrate *m);
int mdev_migrate_apply(MdevMigrate *m);
int mdev_migrate_rollback(MdevMigrate *m);
void mdev_migrate_commit(MdevMigrate *m);
void mdev_migrate_free(MdevMigrate *m);

/* attach (backend-mdev-attach.c): whether an mdev parent here offers one of
 * the types asked for; new UUIDs, checked against the room the type has. */
bool mdev_attach_serves(const AttachChoosing *ch);
int mdev_attach_choose(const AttachChoosing *ch, AttachDevice *out);
