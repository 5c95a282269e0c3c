/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The set-up the worker and the front end's prepare share (worker-setup.h). */
#include <stdio.h>
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

void *prefetch_run(void *userdata) {
        Prefetch *p = userdata;

        (void) alloc_prefetch(p->su->rootfd, p->su->config, &p->stop, &p->probed, &p->n_probed);
        return NULL;
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
