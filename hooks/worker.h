/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The entry point of the hook's worker module, which its front end
 * (mdev-hooks-qemu.c) loads with dlopen() when a domain XML may hold an
 * mdev hostdev and the front end cannot do the work itself (a prepare,
 * release or reconnect whose XML its strict reader read runs in the front
 * end, op-lite.c).
 * Everything else in the module is local to it (worker.sym).
 */
#pragma once

#include <stddef.h>

#define WORKER_MODULE "mdev-hooks-qemu-worker.so"
#define WORKER_ENTRY "mdev_hooks_qemu_worker"

typedef struct Ahead Ahead; /* worker-setup.h */

/* argv as libvirt gave it to the hook (argc >= 3), and the domain XML the
 * front end read from stdin: xml[len] is '\0', len <= DOMXML_MAX_SIZE.
 * ahead: NULL, or what the front end set up and is still reading for this
 * very call before its strict reader declined the XML (migrate-lite.c); the
 * worker goes on with it rather than again, and the front end lets go of
 * it after the worker returns. Both are built from the same sources
 * (worker-setup.c), so the struct is the same on either side. Returns the
 * hook's exit status. */
typedef int (*WorkerEntry)(int argc, char **argv, const char *xml, size_t len, Ahead *ahead);

int mdev_hooks_qemu_worker(int argc, char **argv, const char *xml, size_t len, Ahead *ahead);
