/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the front end (mdev-hooks-qemu.c) runs itself, without libxml2, when
 * its strict reader (lib/domlite.h) reads the domain XML: prepare, release
 * and reconnect (op-lite.c), and migrate and restore when no UUID needs
 * rewriting (migrate-lite.c). Everything else is the worker's (worker.h).
 */
#pragma once

#include <stddef.h>

#include "domdata.h"
#include "hookop.h"

/* prepare, release or reconnect (op), argv as libvirt gave it (argc >= 3),
 * and what domlite_parse() read of the domain XML, which it takes over (and
 * frees with domlite_free()). Returns the hook's exit status. */
int op_lite(HookOp op, int argc, char **argv, Domxml *dom);

/* migrate_lite()'s return when the call is the worker's (domlite declined;
 * a hostdev may get another UUID, which needs libxml2's document to print),
 * having changed and said nothing. */
#define LITE_FALLBACK 3
/* The size from which migrate_lite() reads candidates during the parse
 * (the worker's for a prepare, PREPARE_PREFETCH_MIN_XML there), and from
 * which the front end hands it a prepare too. */
#define LITE_PREFETCH_MIN_XML (512u << 10)

typedef struct Ahead Ahead; /* worker-setup.h */

/* migrate begin, restore begin and prepare, argv as libvirt gave it,
 * xml[len] the domain XML (NUL-terminated, as the worker's). ahead starts
 * as AHEAD_INIT and is the caller's to let go of (ahead_done()), after the
 * worker when the call is the worker's: for a large XML it then holds the
 * lock and may still be reading. Returns the hook's exit status, or
 * LITE_FALLBACK (a prepare only when domlite declines). */
int migrate_lite(int argc, char **argv, const char *xml, size_t len, Ahead *ahead);
