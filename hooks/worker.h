/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The entry points of the hook's two modules, which its front end
 * (mdev-hooks-qemu.c) loads with dlopen() when a domain XML may hold an
 * mdev hostdev: mdev-hooks-qemu-worker.so for every operation, and
 * mdev-hooks-qemu-prepare.so for a prepare whose XML the front end read
 * itself. Everything else in a module is local to it (worker.sym,
 * prepare.sym).
 */
#pragma once

#include <stddef.h>

#include "domdata.h"

#define WORKER_MODULE "mdev-hooks-qemu-worker.so"
#define WORKER_ENTRY "mdev_hooks_qemu_worker"

/* argv as libvirt gave it to the hook (argc >= 3), and the domain XML the
 * front end read from stdin: xml[len] is '\0', len <= DOMXML_MAX_SIZE.
 * Returns the hook's exit status. */
typedef int (*WorkerEntry)(int argc, char **argv, const char *xml, size_t len);

int mdev_hooks_qemu_worker(int argc, char **argv, const char *xml, size_t len);

/* mdev-hooks-qemu-prepare.so: prepare alone, without libxml2. The front end
 * loads it instead of the worker when domlite_parse() (lib/domlite.h) read
 * the XML; dom is that result, which the module takes over (and frees with
 * domlite_free()). Returns the hook's exit status. */
#define PREPARE_MODULE "mdev-hooks-qemu-prepare.so"
#define PREPARE_ENTRY "mdev_hooks_qemu_prepare"

typedef int (*PrepareEntry)(int argc, char **argv, Domxml *dom);

int mdev_hooks_qemu_prepare(int argc, char **argv, Domxml *dom);

/* The same module's second entry, a WorkerEntry: migrate begin and restore
 * begin, the XML read with domlite by the module itself (for an XML of
 * LITE_PREFETCH_MIN_XML or more, a second thread reads the candidates
 * meanwhile, as the worker does for migrate). Returns the hook's exit status, or HOOK_MODULE_FALLBACK when
 * the call needs the worker (domlite declined; a hostdev may get another
 * UUID, which needs libxml2's document to print), having changed and said
 * nothing. */
#define LITE_ENTRY "mdev_hooks_qemu_lite"
#define HOOK_MODULE_FALLBACK 3
/* The size from which the entry reads candidates during the parse: the
 * worker's for a prepare (PREPARE_PREFETCH_MIN_XML there). */
#define LITE_PREFETCH_MIN_XML (512u << 10)

int mdev_hooks_qemu_lite(int argc, char **argv, const char *xml, size_t len);
