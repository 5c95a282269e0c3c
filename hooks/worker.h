/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hook's worker: the part that needs libxml2. The front end
 * (mdev-hooks-qemu.c) runs it when a domain XML may hold an mdev hostdev
 * and it cannot do the work itself (a prepare, release or reconnect whose
 * XML its strict reader read runs in the front end, op-lite.c), in two
 * steps:
 *
 * - WORKER_PROGRAM (worker-main.c), which the front end runs in its own
 *   place with execve(): the front end is linked statically, and a static
 *   program cannot load a module. It is linked dynamically, with libc
 *   alone, and loads the ICU stand-in and then
 * - WORKER_MODULE (mdev-hooks-qemu-worker.c, dlopen), which brings libxml2
 *   and the rest, and runs the operation from WORKER_ENTRY.
 *   Everything else in the module is local to it (worker.sym).
 */
#pragma once

#include <stddef.h>

#define WORKER_PROGRAM "mdev-hooks-qemu-worker"
#define WORKER_MODULE "mdev-hooks-qemu-worker.so"
#define WORKER_ENTRY "mdev_hooks_qemu_worker"

typedef struct Ahead Ahead; /* worker-setup.h */

/* argv as libvirt gave it to the hook (argc >= 3), and the domain XML the
 * front end read from stdin: xml[len] is '\0', len <= DOMXML_MAX_SIZE.
 * ahead: NULL, or what the front end set up and read for this very call
 * before its strict reader declined the XML (migrate-lite.c), taken over
 * by the program (ahead_take_over()); the worker goes on with it rather
 * than again, and the program lets go of it after the worker returns.
 * Returns the hook's exit status. */
typedef int (*WorkerEntry)(int argc, char **argv, const char *xml, size_t len, Ahead *ahead);

int mdev_hooks_qemu_worker(int argc, char **argv, const char *xml, size_t len, Ahead *ahead);
