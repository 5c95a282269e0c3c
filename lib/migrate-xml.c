/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* migrate_run(): migrate.c on libxml2's document (migrate.h). Its own file
 * so that migrate.c links without libxml2 (the hook's front end, hooks/migrate-lite.c). */
#include "domxml.h"
#include "hook.h"
#include "migrate.h"
#include "vgpu.h"

int migrate_run(HookContext *ctx, HookOp op) {
        static const MigrateEdit full = {
                .has_orphan_meta = domxml_has_orphan_meta,
                .set_mdev_uuid = domxml_set_mdev_uuid,
                .vgpu = vgpu_migrate,
                .lite = false,
        };

        return migrate_core(ctx, op, &full);
}
