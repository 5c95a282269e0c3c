/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the hook's worker (worker.h) and the front end (op-lite.c,
 * migrate-lite.c) do around an operation: the config, the boot id, the
 * record and the host-wide lock before it, the log and the guest's name
 * at its start, the exit status at its end.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>

#include "alloc.h"
#include "hookop.h"
#include "config.h"
#include "error.h"
#include "hook.h"
#include "util.h"

typedef struct Setup {
        int rootfd, ledgerfd, lockfd;
        Config *config;
        char boot_id[UUID_STRING_MAX];
        AllocOpened opened; /* a prepare's candidates' files (alloc_preopen()) */
} Setup;

#define SETUP_INIT { .rootfd = -1, .ledgerfd = -1, .lockfd = -1 }

/* Opens the root, loads the config (its warnings logged), reads the boot id,
 * opens the record and takes the lock for "OP GUEST". For a prepare whose
 * XML is read (dom; NULL: not yet), it opens the candidates' files while it
 * waits for the lock, when another holds it (alloc_preopen()):
 * Setup.opened. -errno with the message set; su is then for setup_done()
 * to clean up. */
int setup(HookOp op, const char *guest, const Domxml *dom, Setup *su);
/* Lets go of everything setup() took, the lock with it. */
void setup_done(Setup *su);

/* A second thread's reads while the XML is parsed: the candidates of every
 * enabled type (alloc_prefetch()), under the lock setup() took, until stop
 * is set; probed is then the caller's to free. */
typedef struct Prefetch {
        const Setup *su;
        atomic_bool stop;
        AllocCandidate *probed;
        size_t n_probed;
} Prefetch;

/* The work of a large XML's call done before its parse: setup(), and the
 * second thread reading the candidates meanwhile. When the front end's
 * strict reader declines such an XML, it hands the worker its Ahead as it
 * stands (worker.h): the lock still held and the thread still reading
 * through libxml2's parse, so that nothing is set up or read twice. It
 * must not move once started (the thread holds its address). */
typedef struct Ahead {
        Setup su;
        bool set_up;               /* setup() was called */
        int setup_r;               /* and returned this */
        ErrorSaved setup_why;
        bool reading;              /* the thread runs */
        pthread_t thread;
        Prefetch pf;
} Ahead;

#define AHEAD_INIT { .su = SETUP_INIT }

/* setup() for "OP GUEST", then the thread. A failure of setup() is kept for
 * ahead_setup(), to be said after the parse: an XML that holds no mdev
 * needs none of it. */
void ahead_start(HookOp op, const char *guest, Ahead *ah);
/* Stops the thread and waits for it (nothing when none runs). */
void ahead_stop(Ahead *ah);
/* After the parse: setup()'s result (its message restored), setup() being
 * called now when ahead_start() was not. */
int ahead_setup(HookOp op, const char *guest, Ahead *ah);
/* ahead_stop(), then lets go of what was read and what setup() took. */
void ahead_done(Ahead *ah);

/* What every operation starts with: the log, for guest, and the guest's
 * name checked. -1 when the operation may go on, else its exit status. */
int op_begin(HookOp op, const char *guest);
/* The exit status of an operation that returned r: a failure is said as
 * an error when it fails the guest's start (hook_op_fails_start()), else
 * as a warning. */
int op_end(HookOp op, int r);

/* Across the front end's execve() of the worker (hooks/mdev-hooks-qemu.c):
 * the front end lets the thread finish its reads, then writes into a memfd
 * what ahead_done() would let go of: setup()'s result and message, its
 * descriptors (left open across the execve, the lock with them), the boot
 * id, what was read and the config's text. Both sides are built from
 * these sources; a magic
 * and the struct's size check that they are one build. *ret_fd: the
 * memfd, close-on-exec (the caller clears that just before the execve).
 * -errno with the message set. */
int ahead_hand_over(Ahead *ah, int *ret_fd);
/* The worker's side: ah (AHEAD_INIT) from fd, as the front end left it,
 * the config parsed again from the text the front end read, without a
 * word (the front end said its warnings). Closes fd. -errno with the message set; ah then holds what
 * it took, for ahead_done(). */
int ahead_take_over(int fd, Ahead *ah);

/* The context of an operation on dom for guest, from what setup() took
 * (su keeps owning it: setup_done() still lets go of it). */
HookContext setup_context(const Setup *su, Domxml *dom, const char *guest);
