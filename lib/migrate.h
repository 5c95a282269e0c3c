/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * migrate begin / restore begin (migrate.c) for either parser's domain:
 * migrate_run() (migrate-xml.c) changes libxml2's document (domxml.h), and
 * migrate_run_lite() (migrate.c) takes domlite's (domlite.h), which cannot
 * be changed, without linking libxml2. What differs is here.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "hook.h"
#include "vgpu.h"

typedef struct MigrateEdit {
        /* domxml_has_orphan_meta() */
        bool (*has_orphan_meta)(const Domxml *d, const char *uuid);
        /* domxml_set_mdev_uuid() */
        int (*set_mdev_uuid)(Domxml *d, size_t i, const char *uuid);
        /* vgpu_migrate(), or NULL: the domain has no PCI hostdev */
        int (*vgpu)(HookContext *ctx, VgpuPlan *p);
        /* The document cannot be changed: go on only when every hostdev is
         * certain to keep its UUID, else return 1 before changing anything. */
        bool lite;
} MigrateEdit;

/* migrate_run() with these edits: 0 done, 1 (lite only) nothing done, the
 * call needs libxml2's document; -errno with the reason. */
int migrate_core(HookContext *ctx, HookOp op, const MigrateEdit *ed);
