/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "enumtable.h"
#include "hookop.h"

ENUM_IMPL(hook_op, HookOp, _HOOK_OP_MAX,
          "start",
          "stopped",
          "prepare",
          "release",
          "migrate",
          "started",
          "reconnect",
          "attach",
          "restore");

/* What mdev-hooks does with each operation (hookop.h); all others false. */
static const struct {
        bool handled;
        bool fails_start;
} hook_op_flags[_HOOK_OP_MAX] = {
        [HOOK_OP_PREPARE] = { .handled = true, .fails_start = true },
        [HOOK_OP_RELEASE] = { .handled = true },
        [HOOK_OP_MIGRATE] = { .handled = true, .fails_start = true },
        [HOOK_OP_RECONNECT] = { .handled = true },
        [HOOK_OP_RESTORE] = { .handled = true, .fails_start = true },
};

bool hook_op_is_handled(HookOp op) {
        return op >= 0 && op < _HOOK_OP_MAX && hook_op_flags[op].handled;
}

bool hook_op_fails_start(HookOp op) {
        return op >= 0 && op < _HOOK_OP_MAX && hook_op_flags[op].fails_start;
}
