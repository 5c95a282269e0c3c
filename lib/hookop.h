/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libvirt qemu hook's operations, table-driven like libvirt's
 * virHookQemuOp. libc only: the hook's program (hooks/mdev-hooks-qemu.c)
 * and its worker module share this one table.
 *
 * An unknown operation maps to _HOOK_OP_INVALID and is a no-op with exit 0,
 * because libvirt adds operations over time.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>

#include "enumtable.h"

typedef enum HookOp {
        HOOK_OP_START,
        HOOK_OP_STOPPED,
        HOOK_OP_PREPARE,
        HOOK_OP_RELEASE,
        HOOK_OP_MIGRATE,
        HOOK_OP_STARTED,
        HOOK_OP_RECONNECT,
        HOOK_OP_ATTACH,
        HOOK_OP_RESTORE,
        _HOOK_OP_MAX,
        _HOOK_OP_INVALID = -EINVAL,
} HookOp;

/* hook_op_to_string(), hook_op_from_string(): _HOOK_OP_INVALID when unknown. */
ENUM_DECL(hook_op, HookOp);
/* Whether mdev-hooks acts on the operation at all (prepare, release,
 * migrate, restore, reconnect); the others exit 0 reading nothing. */
bool hook_op_is_handled(HookOp op);
/* Whether a failure must be reported with exit 1, stopping the guest's start
 * or migration (prepare, migrate, restore). release and reconnect never fail:
 * libvirt ignores the first and kills the guest on the second. */
bool hook_op_fails_start(HookOp op);
