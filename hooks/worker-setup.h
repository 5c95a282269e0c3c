/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the hook's worker (worker.h) and the front end's prepare
 * (prepare-lite.h) do before an operation: the config,
 * the boot id, the record and the host-wide lock.
 */
#pragma once

#include <stdatomic.h>

#include "alloc.h"
#include "hookop.h"
#include "config.h"
#include "hook.h"
#include "util.h"

typedef struct Setup {
        int rootfd, ledgerfd, lockfd;
        Config *config;
        char boot_id[UUID_STRING_MAX];
} Setup;

#define SETUP_INIT { .rootfd = -1, .ledgerfd = -1, .lockfd = -1 }

/* Opens the root, loads the config (its warnings logged), reads the boot id,
 * opens the record and takes the lock for "OP GUEST". -errno with the
 * message set; su is then for setup_done() to clean up. */
int setup(HookOp op, const char *guest, Setup *su);
/* Lets go of everything setup() took, the lock with it. */
void setup_done(Setup *su);

/* A second thread's reads while the XML is parsed: the candidates of every
 * enabled type (alloc_prefetch()), under the lock setup() took, until stop
 * is set. prefetch_run() is the thread's function, its argument a Prefetch
 * (su set, stop false); probed is then the caller's to free. */
typedef struct Prefetch {
        const Setup *su;
        atomic_bool stop;
        AllocCandidate *probed;
        size_t n_probed;
} Prefetch;

void *prefetch_run(void *userdata);

/* The context of an operation on dom for guest, from what setup() took
 * (su keeps owning it: setup_done() still lets go of it). */
HookContext setup_context(const Setup *su, Domxml *dom, const char *guest);
