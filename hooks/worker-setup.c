/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The set-up the worker and the front end's prepare share (worker-setup.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hook.h"
#include "ledger.h"
#include "lock.h"
#include "log.h"
#include "util.h"
#include "worker-setup.h"

void setup_done(Setup *su) {
        config_free(su->config);
        closep(&su->lockfd); /* lets go of the lock */
        closep(&su->ledgerfd);
        closep(&su->rootfd);
        *su = (Setup) { .rootfd = -1, .ledgerfd = -1, .lockfd = -1 };
}

int setup(HookOp op, const char *guest, Setup *su) {
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
        return lock_acquire(su->rootfd, su->config->lock_timeout, what, &su->lockfd);
}

static void *prefetch_run(void *userdata) {
        Prefetch *p = userdata;

        (void) alloc_prefetch(p->su->rootfd, p->su->config, &p->stop, &p->probed, &p->n_probed);
        return NULL;
}

void ahead_start(HookOp op, const char *guest, Ahead *ah) {
        ah->set_up = true;
        ah->setup_r = setup(op, guest, &ah->su);
        if (ah->setup_r < 0) {
                error_save(&ah->setup_why);
                error_clear();
                return;
        }
        ah->pf.su = &ah->su;
        atomic_init(&ah->pf.stop, false);
        ah->reading = pthread_create(&ah->thread, NULL, prefetch_run, &ah->pf) == 0;
}

void ahead_stop(Ahead *ah) {
        if (!ah->reading)
                return;
        atomic_store(&ah->pf.stop, true);
        pthread_join(ah->thread, NULL);
        ah->reading = false;
}

int ahead_setup(HookOp op, const char *guest, Ahead *ah) {
        if (!ah->set_up) {
                ah->set_up = true;
                ah->setup_r = setup(op, guest, &ah->su);
                return ah->setup_r;
        }
        if (ah->setup_r < 0)
                return error_restore(ah->setup_r, &ah->setup_why);
        return 0;
}

void ahead_done(Ahead *ah) {
        ahead_stop(ah);
        free(ah->pf.probed);
        ah->pf.probed = NULL;
        ah->pf.n_probed = 0;
        setup_done(&ah->su);
        ah->set_up = false;
}

HookContext setup_context(const Setup *su, Domxml *dom, const char *guest) {
        HookContext ctx = {
                .rootfd = su->rootfd,
                .ledgerfd = su->ledgerfd,
                .lockfd = su->lockfd,
                .config = su->config,
                .dom = dom,
                .guest = guest,
        };

        memcpy(ctx.boot_id, su->boot_id, sizeof ctx.boot_id);
        return ctx;
}

int op_begin(HookOp op, const char *guest) {
        log_open("mdev-hooks-qemu", LOG_TARGET_STDERR | LOG_TARGET_SYSLOG);
        log_set_subject(guest);
        if (guest[0] == '\0' || strlen(guest) >= GUEST_NAME_MAX) {
                log_error("the guest name is empty or longer than %u bytes", GUEST_NAME_MAX - 1);
                return hook_op_fails_start(op) ? 1 : 0;
        }
        return -1;
}

int op_end(HookOp op, int r) {
        if (r < 0) {
                if (hook_op_fails_start(op)) {
                        log_error("%s", error_get(r));
                        return 1;
                }
                log_warning("%s", error_get(r));
        }
        log_close();
        return 0;
}
