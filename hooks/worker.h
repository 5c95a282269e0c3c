/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hook's worker: the module (mdev-hooks-qemu-worker.c) that the hook
 * (mdev-hooks-qemu.c) loads with dlopen() from its own directory, at the
 * point of use, when the domain XML may hold an mdev hostdev or a vGPU.
 * It brings libxml2, inih and the library, and runs the operation from
 * WORKER_ENTRY; everything else in it is local to it (worker.sym). A guest
 * without mdevs never loads it.
 */
#pragma once

#include <stddef.h>

#define WORKER_MODULE "mdev-hooks-qemu-worker.so"
#define WORKER_ENTRY "mdev_hooks_qemu_worker"

/* argv as libvirt gave it to the hook (argc >= 3), and the domain XML it
 * read from stdin: xml[len] is '\0'; more than DOMXML_MAX_SIZE bytes only
 * when it is the head of a larger one (release and reconnect, which then go
 * by the record). Returns the hook's exit status. */
typedef int (*WorkerEntry)(int argc, char **argv, const char *xml, size_t len);

int mdev_hooks_qemu_worker(int argc, char **argv, const char *xml, size_t len);
