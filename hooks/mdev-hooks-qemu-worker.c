/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mdev-hooks-qemu-worker.so: loaded (dlopen) by the hook (mdev-hooks-qemu.c)
 * when the domain XML may hold an mdev (worker.h). One path for every
 * operation: it parses the XML the hook read, once, with libxml2; loads the
 * config, reads the boot id, opens the record and takes the host-wide lock,
 * once; and runs the operation.
 *
 * Exit status: 0 done (always for release and reconnect, which libvirt
 * ignores or which must never fail); 1 when prepare, migrate or restore
 * failed, with one line on stderr that libvirt shows to the user.
 */
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "backend.h"
#include "config.h"
#include "domxml.h"
#include "hook.h"
#include "ledger.h"
#include "lock.h"
#include "log.h"
#include "util.h"
#include "worker.h"

/* What an operation runs with, besides the XML: taken by setup(), let go of
 * by setup_done(). */
typedef struct Setup {
        int rootfd, ledgerfd, lockfd;
        Config *config;
        char boot_id[UUID_STRING_MAX];
        AllocOpened opened; /* a prepare's candidates' files (alloc_preopen()) */
} Setup;

#define SETUP_INIT { .rootfd = -1, .ledgerfd = -1, .lockfd = -1 }

static void setup_done(Setup *su) {
        config_free(su->config);
        closep(&su->lockfd); /* lets go of the lock */
        alloc_opened_done(&su->opened);
        closep(&su->ledgerfd);
        closep(&su->rootfd);
}

typedef struct PreopenArgs {
        Setup *su;
        const Domxml *dom;
} PreopenArgs;

static void preopen_while_waiting(void *userdata) {
        PreopenArgs *p = userdata;

        alloc_preopen(p->su->rootfd, p->su->config, p->dom->mdevs, p->dom->n_mdevs, &p->su->opened);
}

/* Opens the root, loads the config (its warnings logged), reads the boot id,
 * opens the record and takes the lock for "OP GUEST". A prepare opens its
 * candidates' files while it waits for the lock, when another holds it
 * (alloc_preopen()). -errno with the message set; su is then for
 * setup_done() to clean up. */
static int setup(HookOp op, const char *guest, const Domxml *dom, Setup *su) {
        PreopenArgs preopen = { .su = su, .dom = dom };
        char what[GUEST_NAME_MAX + 32];
        int r;

        r = root_open(&su->rootfd);
        if (r < 0)
                return r;
        r = config_load(su->rootfd, NULL, &su->config, NULL);
        if (r == -EINVAL) /* its first problem, with how many more */
                return error_prefix(r, "the config has errors, fix it first (mdev-hooks check-config)");
        if (r < 0)
                return r;
        /* accepted as Nova accepts them: said on stderr and to syslog */
        for (char **w = su->config->warnings; w && *w; w++)
                log_warning("%s", *w);
        r = boot_id_read(su->rootfd, su->boot_id);
        if (r < 0)
                return r;
        r = ledger_open(su->rootfd, &su->ledgerfd);
        if (r < 0)
                return r;
        snprintf(what, sizeof what, "%s %s", hook_op_to_string(op), guest);
        return lock_acquire_waiting(su->rootfd, su->config->lock_timeout, what,
                                    op == HOOK_OP_PREPARE && dom ? preopen_while_waiting : NULL, &preopen,
                                    &su->lockfd);
}

/* The operation itself, on what setup() took. */
static int dispatch(HookOp op, HookContext *ctx) {
        int r;

        switch (op) {
        case HOOK_OP_PREPARE:
                return hook_prepare(ctx);
        case HOOK_OP_RELEASE:
                return hook_release(ctx);
        case HOOK_OP_RECONNECT:
                return hook_reconnect(ctx);
        case HOOK_OP_MIGRATE:
        case HOOK_OP_RESTORE:
                r = migrate_run(ctx, op);
                if (r >= 0 && ctx->rewritten)
                        r = domxml_write(ctx->dom, STDOUT_FILENO);
                return r;
        default:
                return 0;
        }
}

static int run(HookOp op, const char *guest, const char *xml, size_t xml_len) {
        _cleanup_domxml_free_ Domxml *dom = NULL;
        _cleanup_(setup_done) Setup su = SETUP_INIT;
        HookContext ctx;
        int r;

        r = domxml_parse(xml, xml_len, &dom);
        if (r < 0) {
                /* release goes by the record, not by the XML: still free what
                 * the guest holds. Everything else stops here. */
                if (op != HOOK_OP_RELEASE)
                        return r;
                log_warning("%s; releasing by the record alone", error_get(r));
                error_clear();
        } else if (!backend_dom_has_any(dom) && op != HOOK_OP_RELEASE)
                return 0; /* the hook's scan over-reported */
        r = setup(op, guest, dom, &su);
        if (r < 0)
                return r;
        ctx = (HookContext) {
                .rootfd = su.rootfd,
                .ledgerfd = su.ledgerfd,
                .lockfd = su.lockfd,
                .config = su.config,
                .dom = dom,
                .guest = guest,
                .opened = &su.opened,
        };
        memcpy(ctx.boot_id, su.boot_id, sizeof ctx.boot_id);
        return dispatch(op, &ctx);
}

int mdev_hooks_qemu_worker(int argc, char **argv, const char *xml, size_t xml_len) {
        const char *guest = argv[1];
        HookOp op = hook_op_from_string(argv[2]);
        int r;

        log_open("mdev-hooks-qemu", LOG_TARGET_STDERR | LOG_TARGET_SYSLOG);
        log_set_subject(guest);
        if (guest[0] == '\0' || strlen(guest) >= GUEST_NAME_MAX) {
                log_error("the guest name is empty or longer than %u bytes", GUEST_NAME_MAX - 1);
                return hook_op_fails_start(op) ? 1 : 0;
        }
        r = run(op, guest, xml, xml_len);
        if (r < 0) {
                /* a failure fails the guest's start only for prepare,
                 * migrate and restore; it is a warning otherwise */
                if (hook_op_fails_start(op)) {
                        log_error("%s", error_get(r));
                        return 1;
                }
                log_warning("%s", error_get(r));
        }
        log_close();
        return 0;
}
