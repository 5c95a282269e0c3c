/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "hookop.h"

static const struct {
        const char *name;
        bool handled;
        bool fails_start;
} hook_op_table[_HOOK_OP_MAX] = {
        [HOOK_OP_START] = { "start" },
        [HOOK_OP_STOPPED] = { "stopped" },
        [HOOK_OP_PREPARE] = { "prepare", true, true },
        [HOOK_OP_RELEASE] = { "release", true, false },
        [HOOK_OP_MIGRATE] = { "migrate", true, true },
        [HOOK_OP_STARTED] = { "started" },
        [HOOK_OP_RECONNECT] = { "reconnect", true, false },
        [HOOK_OP_ATTACH] = { "attach" },
        [HOOK_OP_RESTORE] = { "restore", true, true },
};

const char *hook_op_to_string(HookOp op) {
        if (op < 0 || op >= _HOOK_OP_MAX)
                return NULL;
        return hook_op_table[op].name;
}

HookOp hook_op_from_string(const char *s) {
        for (int i = 0; s && i < _HOOK_OP_MAX; i++)
                if (strcmp(hook_op_table[i].name, s) == 0)
                        return (HookOp) i;
        return _HOOK_OP_INVALID;
}

bool hook_op_is_handled(HookOp op) {
        return op >= 0 && op < _HOOK_OP_MAX && hook_op_table[op].handled;
}

bool hook_op_fails_start(HookOp op) {
        return op >= 0 && op < _HOOK_OP_MAX && hook_op_table[op].fails_start;
}
