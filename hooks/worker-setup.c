/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The set-up the worker and the front end's prepare share (worker-setup.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* memfd_create */
#include <sys/stat.h>
#include <unistd.h>

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
        alloc_opened_done(&su->opened);
        closep(&su->ledgerfd);
        closep(&su->rootfd);
        *su = (Setup) { .rootfd = -1, .ledgerfd = -1, .lockfd = -1 };
}

typedef struct PreopenArgs {
        Setup *su;
        const Domxml *dom;
} PreopenArgs;

static void preopen_while_waiting(void *userdata) {
        PreopenArgs *p = userdata;

        alloc_preopen(p->su->rootfd, p->su->config, p->dom->mdevs, p->dom->n_mdevs, &p->su->opened);
}

int setup(HookOp op, const char *guest, const Domxml *dom, Setup *su) {
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

static void *prefetch_run(void *userdata) {
        Prefetch *p = userdata;

        (void) alloc_prefetch(p->su->rootfd, p->su->config, &p->stop, &p->probed, &p->n_probed);
        return NULL;
}

void ahead_start(HookOp op, const char *guest, Ahead *ah) {
        ah->set_up = true;
        ah->setup_r = setup(op, guest, NULL, &ah->su);
        if (ah->setup_r < 0) {
                error_save(&ah->setup_why);
                error_clear();
                return;
        }
        ah->pf.su = &ah->su;
        atomic_init(&ah->pf.stop, false);
        ah->reading = pthread_create(&ah->thread, NULL, prefetch_run, &ah->pf) == 0;
}

/* Waits for the thread that reads the candidates, once told to stop when
 * stop is set (else it makes every read it was going to make). */
static void ahead_join(Ahead *ah, bool stop) {
        if (!ah->reading)
                return;
        if (stop)
                atomic_store(&ah->pf.stop, true);
        pthread_join(ah->thread, NULL);
        ah->reading = false;
}

void ahead_stop(Ahead *ah) {
        ahead_join(ah, true);
}

int ahead_setup(HookOp op, const char *guest, Ahead *ah) {
        if (!ah->set_up) {
                ah->set_up = true;
                ah->setup_r = setup(op, guest, NULL, &ah->su);
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

/* What ahead_hand_over() writes, then n_probed AllocCandidates and the
 * config's text. */
typedef struct AheadWire {
        char magic[8];
        size_t size; /* sizeof(AheadWire) + sizeof(AllocCandidate) */
        int setup_r;
        ErrorSaved setup_why;
        int rootfd, ledgerfd, lockfd;
        char boot_id[UUID_STRING_MAX];
        size_t n_probed;
        bool config_missing;
        size_t config_len; /* its text, after the reads */
} AheadWire;

#define AHEAD_WIRE_MAGIC "mh-ahead"
#define AHEAD_WIRE_SIZE (sizeof(AheadWire) + sizeof(AllocCandidate))

static int keep_open(int fd) {
        return fd < 0 || fcntl(fd, F_SETFD, 0) == 0 ? 0 : -errno;
}

int ahead_hand_over(Ahead *ah, int *ret_fd) {
        _cleanup_close_ int fd = -1;
        AheadWire w;
        int r;

        /* written whole: its padding too */
        memset(&w, 0, sizeof w);
        memcpy(w.magic, AHEAD_WIRE_MAGIC, sizeof w.magic);
        w.size = AHEAD_WIRE_SIZE;
        w.setup_r = ah->setup_r;
        w.setup_why = ah->setup_why;
        w.rootfd = w.ledgerfd = w.lockfd = -1;

        /* every read it was going to make, not stopped: the worker's
         * placement takes them as they are */
        ahead_join(ah, false);
        if (ah->setup_r == 0) {
                w.rootfd = ah->su.rootfd;
                w.ledgerfd = ah->su.ledgerfd;
                w.lockfd = ah->su.lockfd;
                memcpy(w.boot_id, ah->su.boot_id, sizeof w.boot_id);
                w.n_probed = ah->pf.n_probed;
                w.config_missing = !ah->su.config->text;
                w.config_len = ah->su.config->text_len;
        }
        fd = memfd_create("mdev-hooks-ahead", MFD_CLOEXEC);
        if (fd < 0)
                return error_set(-errno, "cannot hand the worker what was done: memfd_create: %s", strerror(errno));
        r = write_full(fd, &w, sizeof w);
        if (r >= 0 && w.n_probed > 0)
                r = write_full(fd, ah->pf.probed, w.n_probed * sizeof *ah->pf.probed);
        if (r >= 0 && w.config_len > 0)
                r = write_full(fd, ah->su.config->text, w.config_len);
        if (r >= 0) {
                r = keep_open(w.rootfd);
                if (r >= 0)
                        r = keep_open(w.ledgerfd);
                if (r >= 0)
                        r = keep_open(w.lockfd);
        }
        if (r < 0)
                return error_set(r, "cannot hand the worker what was done: %s", strerror(-r));
        *ret_fd = steal_fd(&fd);
        return 0;
}

/* Each descriptor it names is open, or -1 where setup() failed. */
static bool wire_valid(const AheadWire *w, off_t size) {
        if (memcmp(w->magic, AHEAD_WIRE_MAGIC, sizeof w->magic) != 0 || w->size != AHEAD_WIRE_SIZE)
                return false;
        if (w->n_probed > (size_t) size / sizeof(AllocCandidate) || w->config_len > (size_t) size ||
            (off_t) (sizeof *w + w->n_probed * sizeof(AllocCandidate) + w->config_len) != size)
                return false;
        if (w->setup_r > 0 || (w->setup_r < 0 && (w->n_probed > 0 || w->config_len > 0)) ||
            (w->config_missing && w->config_len > 0))
                return false;
        return w->setup_r < 0 ||
               (fcntl(w->rootfd, F_GETFD) >= 0 && fcntl(w->ledgerfd, F_GETFD) >= 0 && fcntl(w->lockfd, F_GETFD) >= 0);
}

int ahead_take_over(int fd, Ahead *ah) {
        _cleanup_close_ int wirefd = fd;
        _cleanup_free_ char *text = NULL;
        AheadWire w;
        struct stat st;
        ssize_t n;
        int r;

        if (fstat(wirefd, &st) < 0)
                return error_set(-errno, "cannot take over the front end's work: %s", strerror(errno));
        n = pread(wirefd, &w, sizeof w, 0);
        if (n != (ssize_t) sizeof w || !wire_valid(&w, st.st_size))
                return error_set(-EINVAL, "cannot take over the front end's work: what it handed over is not from this build (is mdev-hooks installed whole?)");
        ah->set_up = true;
        ah->setup_r = w.setup_r;
        ah->setup_why = w.setup_why;
        ah->setup_why.message[sizeof ah->setup_why.message - 1] = '\0';
        if (w.setup_r < 0)
                return 0;
        ah->su.rootfd = w.rootfd;
        ah->su.ledgerfd = w.ledgerfd;
        ah->su.lockfd = w.lockfd;
        memcpy(ah->su.boot_id, w.boot_id, sizeof w.boot_id);
        ah->su.boot_id[sizeof ah->su.boot_id - 1] = '\0';
        if (w.n_probed > 0) {
                size_t size = w.n_probed * sizeof *ah->pf.probed;

                ah->pf.probed = malloc(size);
                if (!ah->pf.probed)
                        return error_set(-ENOMEM, "cannot take over the front end's work: out of memory");
                n = pread(wirefd, ah->pf.probed, size, sizeof w);
                if (n != (ssize_t) size)
                        return error_set(n < 0 ? -errno : -EIO, "cannot take over the front end's work: its reads are cut short");
                ah->pf.n_probed = w.n_probed;
        }
        if (!w.config_missing) {
                text = malloc(w.config_len + 1);
                if (!text)
                        return error_set(-ENOMEM, "cannot take over the front end's work: out of memory");
                n = pread(wirefd, text, w.config_len, (off_t) (sizeof w + w.n_probed * sizeof *ah->pf.probed));
                if (n != (ssize_t) w.config_len)
                        return error_set(n < 0 ? -errno : -EIO, "cannot take over the front end's work: its config is cut short");
        }
        /* what the front end parsed, again: the same config, not the file
         * as it may be now */
        r = config_parse_text(NULL, text, w.config_len, &ah->su.config);
        if (r == -EINVAL)
                return error_prefix(r, "the config has errors, fix it first (mdev-hooks check-config)");
        return r;
}

HookContext setup_context(const Setup *su, Domxml *dom, const char *guest) {
        HookContext ctx = {
                .rootfd = su->rootfd,
                .ledgerfd = su->ledgerfd,
                .lockfd = su->lockfd,
                .config = su->config,
                .dom = dom,
                .guest = guest,
                .opened = &su->opened,
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
