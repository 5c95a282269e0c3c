/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The udev helper's logic (uevent.h).
 *
 * One rule decides every record: record_refresh() compares a record with what
 * sysfs shows now, under the host-wide lock, and changes the record only where
 * it is no longer true. The event says which records to look at (those of one
 * parent, or one UUID); it never decides the outcome by itself. A hook that
 * creates or removes an mdev does so under the same lock and changes the
 * record before releasing it, so the event its own write causes finds a true
 * record and does nothing.
 *
 * Split as kmod splits a large concept, behind uevent-internal.h: this
 * file classifies an event and handles it, by what it is about (a parent,
 * an mdev, a PCI device); uevent-record.c changes the record, says what
 * it changed, and sweeps the records of an earlier boot.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>

#include "config.h"
#include "enumtable.h"
#include "ledger.h"
#include "lock.h"
#include "log.h"
#include "pciaddr.h"
#include "sriov.h"
#include "sysfs.h"
#include "backend.h"
#include "uevent-internal.h"

/* How long one event sweeps other parents' stale records under the lock. */
#define UEVENT_SWEEP_USEC (2ULL * 1000000ULL)
/* How often an event that waits for the lock looks whether another event
 * has done its work meanwhile. */
#define UEVENT_WAIT_SLICE_USEC 50000ULL

ENUM_IMPL(uevent_kind, UeventKind, _UEVENT_KIND_MAX,
          "ignore",
          "registered",
          "unregistered",
          "mdev",
          "pci");

static bool action_is(const char *action, const char *a, const char *b, const char *c, const char *d) {
        return streq_ptr(action, a) || streq_ptr(action, b) || streq_ptr(action, c) || streq_ptr(action, d);
}

int uevent_classify(const char *action, const char *subsystem, const char *devpath,
                    const char *mdev_state, const char *kernel, Uevent *ret) {
        Uevent ev = { .kind = UEVENT_IGNORE };
        const char *name = kernel;

        if (!name && devpath) {
                name = strrchr(devpath, '/');
                name = name ? name + 1 : devpath;
        }
        if (!action || !name || !*name) {
                *ret = ev;
                return 0;
        }

        if (streq(action, "change") && mdev_state) {
                /* Sent on the parent's own device, whatever its subsystem. */
                if (streq(mdev_state, "registered"))
                        ev.kind = UEVENT_PARENT_REGISTERED;
                else if (streq(mdev_state, "unregistered"))
                        ev.kind = UEVENT_PARENT_UNREGISTERED;
        } else if (streq_ptr(subsystem, "mdev") && action_is(action, "add", "bind", "unbind", "remove"))
                ev.kind = UEVENT_MDEV;
        else if (streq_ptr(subsystem, "pci") && action_is(action, "add", "bind", NULL, NULL)) {
                ev.kind = UEVENT_PCI;
                ev.add = streq(action, "add");
        }

        switch (ev.kind) {
        case UEVENT_IGNORE:
                break;
        case UEVENT_MDEV:
                if (!uuid_is_valid(name))
                        return error_set(-EINVAL, "mdev '%s' is not named by a UUID", name);
                uuid_normalize(name, ev.name);
                break;
        case UEVENT_PCI:
                if (!name_is_valid(name) || !pci_address_normalize(name, ev.name))
                        return error_set(-EINVAL, "'%s' is not a PCI address", name);
                break;
        default:
                if (!name_is_valid(name))
                        return error_set(-EINVAL, "'%s' is not a valid parent name", name);
                snprintf(ev.name, sizeof ev.name, "%s", name);
                break;
        }
        *ret = ev;
        return 0;
}

/* --- the context of one event ------------------------------------------- */

static void context_done(UeventContext *c) {
        free(c->stale);
        c->stale = NULL;
        config_free(c->config);
        c->config = NULL;
        if (c->ledgerfd >= 0)
                close(c->ledgerfd);
        if (c->lockfd >= 0)
                close(c->lockfd); /* releases the lock */
        c->ledgerfd = c->lockfd = -1;
}

static const char *config_name(const UeventContext *c) {
        return c->config && c->config->path ? c->config->path : "/" CONFIG_DEFAULT_PATH;
}

/* Loads the config once. Returns 1 with c->config set, or 0 when there is
 * none to act on: a config with errors is reported in one line, and the
 * caller then does only what needs no config (keeping the record true). */
static int context_load_config(UeventContext *c) {
        int r;

        if (c->config_loaded)
                return c->config ? 1 : 0;
        c->config_loaded = true;
        r = config_load(c->rootfd, NULL, &c->config, NULL);
        if (r < 0) {
                c->config = NULL;
                log_msg(LOG_ERR, "cannot use the config, so only the record is kept up to date: %s%s", error_get(r),
                        r == -EINVAL ? "; run 'mdev-hooks check-config'" : "");
                error_clear();
                return 0;
        }
        for (char **w = c->config->warnings; w && *w; w++)
                log_msg(LOG_WARNING, "%s", *w);
        return 1;
}

static unsigned context_lock_timeout(const UeventContext *c) {
        if (c->config && c->config->lock_timeout < UEVENT_LOCK_TIMEOUT_MAX)
                return c->config->lock_timeout;
        return UEVENT_LOCK_TIMEOUT_MAX;
}

/* Waits for the lock at most timeout_sec seconds (0: one try). */
static int context_lock_for(UeventContext *c, unsigned timeout_sec) {
        char what[NAME_STRING_MAX + 64];

        if (c->lockfd >= 0)
                return 0;
        snprintf(what, sizeof what, "mdev-hooks-udev %s %s", uevent_kind_to_string(c->ev->kind), c->ev->name);
        return lock_acquire(c->rootfd, timeout_sec, what, &c->lockfd);
}

static int context_lock(UeventContext *c) {
        (void) context_load_config(c); /* for lock_timeout */
        return context_lock_for(c, context_lock_timeout(c));
}

/* 1 with c->ledgerfd open, 0 when there is no record directory at all. */
int context_open_ledger(UeventContext *c) {
        int r;

        if (c->ledgerfd >= 0)
                return 1;
        r = ledger_open_existing(c->rootfd, &c->ledgerfd);
        if (r == -ENOENT)
                return 0;
        return r < 0 ? r : 1;
}

/* --- parents ---------------------------------------------------------------- */

/* Logs what the config asks of this parent that it does not offer. Reads
 * only the configured type's directory unless something is wrong. */
static void parent_check_config(UeventContext *c, const char *parent) {
        _cleanup_strv_free_ char **types = NULL;
        _cleanup_free_ char *offered = NULL;
        const ConfigType *t;
        unsigned available;
        bool listed;
        int r;

        t = config_parent_type(c->config, parent);
        if (!t)
                return; /* mdev-hooks does not use this parent */
        r = sysfs_type_available(c->rootfd, parent, t->name, &available);
        if (r >= 0)
                return;
        error_clear();
        r = sysfs_parent_types(c->rootfd, parent, &types);
        if (r == -ENOENT) {
                error_clear();
                return; /* unregistered again meanwhile */
        }
        if (r < 0) {
                log_msg(LOG_WARNING, "cannot read the types it offers: %s", error_get(r));
                error_clear();
                return;
        }
        if (strv_contains(types, t->name))
                return;
        listed = config_parent_is_listed(c->config, parent);
        offered = strv_join(types, ", ");
        log_msg(listed ? LOG_WARNING : LOG_INFO,
             "%s: '%s' does not offer type '%s' %s; it offers: %s",
             config_name(c), parent, t->name,
             listed ? "that device_addresses assigns to it" : "(the default type), so it is not used",
             offered && *offered ? offered : "nothing");
}

/* Without the lock: 1 if the event still has something to change, 0 if not.
 * list holds the parent's own records; reread: read them again (they may
 * have been changed by another event since the scan). While the boot's sweep
 * is not done, there is work left (for whichever event has the lock). */
static int parent_pending(UeventContext *c, const char *parent, bool eager, const LedgerEntry *list, size_t n, bool reread) {
        int r;

        if (!sweep_is_done(c))
                return 1;
        for (size_t i = 0; i < n; i++) {
                LedgerEntry e = list[i];

                if (!streq(e.parent, parent))
                        continue;
                if (reread) {
                        r = record_reread(c, e.uuid, parent, &e);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                continue;
                }
                r = record_refresh(c, &e, eager, false);
                if (r != 0)
                        return r;
        }
        return 0;
}

/* Waits for the lock until deadline (now_usec(); 0: one try), and looks
 * every UEVENT_WAIT_SLICE_USEC whether another event has done this one's
 * work meanwhile. 1 with the lock held (c->lockfd), 0 if there is nothing
 * left to do, -ETIMEDOUT (with lock.c's message naming the holder), -errno. */
static int parent_wait_lock(UeventContext *c, unsigned long long deadline, bool eager, const LedgerEntry *list, size_t n) {
        _cleanup_close_ int fd = -1;
        char what[NAME_STRING_MAX + 64];
        int r;

        r = context_lock_for(c, 0); /* also makes run/mdev-hooks/ and the lock file */
        if (r != -ETIMEDOUT)
                return r < 0 ? r : 1;
        if (deadline == 0)
                return r;
        error_clear();
        fd = openat(c->rootfd, LOCK_PATH, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return error_set(-errno, "cannot open the lock '/" LOCK_PATH "': %s", strerror(errno));
        for (;;) {
                unsigned long long now = now_usec();

                if (now >= deadline) {
                        r = context_lock_for(c, 0); /* a last try; its message names the holder */
                        return r < 0 ? r : 1;
                }
                r = lock_wait_usec(fd, deadline - now < UEVENT_WAIT_SLICE_USEC ? deadline - now : UEVENT_WAIT_SLICE_USEC);
                if (r == 0)
                        break;
                if (r != -ETIMEDOUT)
                        return error_set(r, "cannot lock '/" LOCK_PATH "': %s", strerror(-r));
                r = parent_pending(c, c->ev->name, eager, list, n, true);
                if (r <= 0)
                        return r;
        }
        /* Taken: say who holds it, as lock_acquire() does (a second flock
         * on the same open file takes nothing new). */
        snprintf(what, sizeof what, "mdev-hooks-udev %s %s", uevent_kind_to_string(c->ev->kind), c->ev->name);
        r = lock_resume(fd, 0, what);
        if (r < 0)
                return r;
        c->lockfd = steal_fd(&fd);
        return 1;
}

/* Without the lock for as long as there is nothing to change: lists only
 * the parent's own records (on a host with a thousand records, parse only
 * those) and takes no lock if none needs a change. While the boot's sweep
 * is still to do, the event that gets the lock at once does it; the others
 * wait, looking whether their work got done (parent_wait_lock()): at boot,
 * hundreds of events each reading a thousand records would cost more than
 * the sweep. 1 with the lock held and *list the parent's records as last
 * read (NULL when the lock came at once), 0 if nothing is left to do. */
static int parent_lock_if_needed(UeventContext *c, const char *parent, bool eager, LedgerEntry **list, size_t *n) {
        unsigned long long wait_until;
        unsigned timeout;
        int r;

        if (!sweep_is_done(c)) {
                r = context_lock_for(c, 0);
                if (r < 0 && r != -ETIMEDOUT)
                        return r;
                error_clear();
        }
        (void) context_load_config(c);
        timeout = context_lock_timeout(c);
        wait_until = timeout > 0 ? now_usec() + (unsigned long long) timeout * 1000000ULL : 0;
        while (c->lockfd < 0) {
                bool listed_swept = sweep_is_done(c);

                free(steal_pointer(list));
                r = records_scan(c, parent, list, n);
                if (r < 0)
                        return r;
                r = parent_pending(c, parent, eager, *list, *n, false);
                if (r <= 0)
                        return r;

                r = parent_wait_lock(c, wait_until, eager, *list, *n);
                if (r == 0 && !listed_swept)
                        continue; /* swept meanwhile: list again, through the index the sweep has made whole */
                if (r == 0)
                        return 0; /* done by another event meanwhile */
                if (r == -ETIMEDOUT)
                        return error_prefix(r, "gave up after %u s", timeout);
                if (r < 0)
                        return r;
        }
        return 1;
}

/* Under the lock, in one batch: this parent's records first, then, when the
 * boot's sweep is this event's (every record read under the lock), the
 * other parents' stale records, for at most UEVENT_SWEEP_USEC. */
static int parent_refresh(UeventContext *c, const char *parent, bool eager, LedgerEntry **list, size_t *n) {
        unsigned long long deadline;
        bool swept, cut = false;
        int r;

        c->batch = true; /* ended by context_flush() under the lock */
        log_hold();
        swept = sweep_is_done(c);
        if (!swept) {
                free(steal_pointer(list));
                r = records_scan(c, NULL, list, n);
                if (r < 0)
                        return r;
        }
        deadline = now_usec() + UEVENT_SWEEP_USEC;
        for (int pass = 0; pass < 2 && !cut; pass++)
                for (size_t i = 0; i < *n; i++) {
                        const LedgerEntry *l = &(*list)[i];
                        bool own = streq(l->parent, parent);
                        LedgerEntry e;

                        if (pass == 0 ? !own : (own || swept || !record_is_stale(c, l)))
                                continue;
                        if (pass == 1 && now_usec() > deadline) {
                                cut = true;
                                break;
                        }
                        r = record_reread(c, l->uuid, l->parent, &e);
                        if (r < 0)
                                return r;
                        if (r == 0 || (pass == 1 && !record_is_stale(c, &e)))
                                continue;
                        r = record_refresh(c, &e, eager && (own || sysfs_parent_is_registered(c->rootfd, e.parent) > 0), true);
                        if (r < 0)
                                return r;
                }
        if (!swept && !cut)
                sweep_finish(c, *list, *n);
        return 0;
}

/* registered / unregistered. The parent's own records are brought in line
 * with sysfs (with recreate = eager, a registered parent's lost mdevs are made
 * again). Records of other parents from an earlier boot are stale whatever
 * their parent does, so the first event after a boot sweeps them too, for a
 * bounded time; an event that waits for the lock meanwhile looks every
 * UEVENT_WAIT_SLICE_USEC whether its work is done, and goes. At boot, N
 * parents registering cost about one sweep, not N. */
static int parent_changed(UeventContext *c, bool registered) {
        const char *parent = c->ev->name;
        _cleanup_free_ LedgerEntry *list = NULL;
        size_t n = 0;
        bool eager;
        int r;

        r = boot_id_read(c->rootfd, c->boot_id);
        if (r < 0)
                return r;
        if (registered && context_load_config(c) > 0)
                parent_check_config(c, parent);
        eager = registered && c->config && c->config->recreate == CONFIG_RECREATE_EAGER;

        r = context_open_ledger(c);
        if (r <= 0) {
                if (r == 0 && !sweep_is_done(c))
                        sweep_mark_done(c); /* no record at all */
                return r;
        }
        r = parent_lock_if_needed(c, parent, eager, &list, &n);
        if (r <= 0)
                return r;
        return parent_refresh(c, parent, eager, &list, &n);
}

/* --- mdevs ------------------------------------------------------------------ */

/* Whether uuid's record and its mdev agree as they stand, read without the
 * lock: record_refresh() would change nothing. What changes them takes the
 * lock, and has an event of its own. Anything else is decided under it. */
static bool mdev_record_is_true(UeventContext *c, const char *uuid) {
        LedgerEntry e;
        int r;

        r = ledger_read(c->ledgerfd, uuid, &e);
        if (r >= 0)
                r = record_refresh(c, &e, false, false);
        if (r < 0)
                error_clear(); /* said, if need be, under the lock */
        return r == 0;
}

static int mdev_changed(UeventContext *c) {
        const char *uuid = c->ev->name;
        LedgerEntry e;
        int r;

        /* Cheap way out for mdevs mdev-hooks has no record of: foreign ones
         * stay unrecorded. */
        r = context_open_ledger(c);
        if (r <= 0)
                return r;
        if (faccessat(c->ledgerfd, uuid, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : error_set(-errno, "cannot look at '/" LEDGER_DIR "/%s': %s", uuid, strerror(errno));

        r = boot_id_read(c->rootfd, c->boot_id);
        if (r < 0)
                return r;
        /* The mdev a hook has just created, its record written before the
         * create: true as it stands, nothing to change, and no need to wait
         * behind every hook that holds the lock (guests starting at once
         * each raise this event). */
        if (mdev_record_is_true(c, uuid))
                return 0;
        /* A hook that removes or creates this mdev holds the lock until its
         * record is changed: decide only after it is done. */
        r = context_lock(c);
        if (r < 0)
                return r;
        r = record_reread(c, uuid, NULL, &e);
        if (r <= 0)
                return r;
        r = record_refresh(c, &e, false, true);
        return r < 0 ? r : 0;
}

/* --- SR-IOV physical functions (sriov.c) ------------------------------------ */

/* A VF of a backend appeared or bound (NVIDIA's after sriov-manage -e, or
 * at boot): it carries nothing now. A record of it that says otherwise is
 * from before, and record_refresh() decides it: a guest's becomes lost (its
 * next start, or the GPU's plan with recreate = eager, programs the VF
 * again), a free one is dropped. */
static int vf_appeared(UeventContext *c) {
        const char *vf = c->ev->name;
        LedgerEntry e;
        int r;

        r = context_open_ledger(c);
        if (r <= 0)
                return r;
        r = ledger_read(c->ledgerfd, vf, &e); /* most VFs: none, and no lock taken */
        if (r == -ENOENT) {
                error_clear();
                return 0;
        }
        if (r < 0)
                return r;
        r = boot_id_read(c->rootfd, c->boot_id);
        if (r < 0)
                return r;
        r = record_refresh(c, &e, false, false); /* a guest's VF bound for it: true, no lock */
        if (r <= 0)
                return r;
        r = context_lock(c);
        if (r < 0)
                return r;
        r = record_reread(c, vf, NULL, &e);
        if (r <= 0)
                return r;
        r = record_refresh(c, &e, false, true);
        return r < 0 ? r : 0;
}

static int pci_appeared(UeventContext *c) {
        const Backend *b = backend_of_device(c->rootfd, c->ev->name);
        int r;

        if (b) /* a VF of a backend: NVIDIA's VFIO framework (vgpu.h), ... */
                return vf_appeared(c);

        /* Most PCI devices: not in the config at all. */
        r = sriov_config_mentions(c->rootfd, c->ev->name);
        if (r <= 0)
                return r;
        if (context_load_config(c) <= 0)
                return 0;
        return sriov_enable(c->rootfd, c->config, c->ev->name, c->ev->add);
}

/* The end of an event's work, still under the lock if taken
 * (context_done() lets it go): the batch made durable, and r, the work's
 * result, kept over what the flush may say. */
static int context_end(UeventContext *c, int r) {
        ErrorSaved why;
        int k;

        if (r < 0) {
                error_save(&why);
                (void) context_flush(c);
                return error_restore(r, &why);
        }
        k = context_flush(c);
        return k < 0 ? k : r;
}

int uevent_handle(int rootfd, const Uevent *ev) {
        _cleanup_(context_done) UeventContext c = {
                .rootfd = rootfd,
                .ev = ev,
                .ledgerfd = -1,
                .lockfd = -1,
        };

        int r;

        switch (ev->kind) {
        case UEVENT_PARENT_REGISTERED:
                r = parent_changed(&c, true);
                break;
        case UEVENT_PARENT_UNREGISTERED:
                r = parent_changed(&c, false);
                break;
        case UEVENT_MDEV:
                r = mdev_changed(&c);
                break;
        case UEVENT_PCI:
                r = pci_appeared(&c);
                break;
        default:
                return 0;
        }
        return context_end(&c, r);
}

int uevent_gpu_ready(int rootfd, const char *pf, unsigned *ret_made) {
        Uevent ev = { .kind = UEVENT_PARENT_REGISTERED };
        _cleanup_(context_done) UeventContext c = {
                .rootfd = rootfd,
                .ev = &ev,
                .ledgerfd = -1,
                .lockfd = -1,
        };
        int r;

        snprintf(ev.name, sizeof ev.name, "%s", pf);
        r = context_end(&c, parent_changed(&c, true));
        *ret_made = c.made;
        return r;
}
