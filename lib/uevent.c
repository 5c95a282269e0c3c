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
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>

#include "config.h"
#include "ledger.h"
#include "lock.h"
#include "sysfs.h"
#include "uevent.h"

/* How long an mdev may look half made (bus link present, mdev_type link not
 * yet) before we stop waiting for sysfs to settle: 50 x 10 ms. */
#define SETTLE_TRIES 50
#define SETTLE_USEC 10000
/* The config is read whole only to find a PF's address in it. */
#define CONFIG_TEXT_MAX (1024 * 1024)
#define SRIOV_MARK_DIR "run/mdev-hooks/sriov" /* under the root */
#define SWEEP_MARK "run/mdev-hooks/swept"     /* under the root */
/* How long one event sweeps other parents' stale records under the lock. */
#define UEVENT_SWEEP_USEC (2ULL * 1000000ULL)
/* How often an event that waits for the lock looks whether another event
 * has done its work meanwhile. */
#define UEVENT_WAIT_SLICE_USEC 50000ULL

static const char * const kind_table[_UEVENT_KIND_MAX] = {
        [UEVENT_IGNORE] = "ignore",
        [UEVENT_PARENT_REGISTERED] = "registered",
        [UEVENT_PARENT_UNREGISTERED] = "unregistered",
        [UEVENT_MDEV] = "mdev",
        [UEVENT_PCI] = "pci",
};

const char *uevent_kind_to_string(UeventKind k) {
        if (k < 0 || k >= _UEVENT_KIND_MAX)
                return NULL;
        return kind_table[k];
}

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
                if (!name_is_valid(name) || !config_pci_address_is_valid(name))
                        return error_set(-EINVAL, "'%s' is not a PCI address", name);
                snprintf(ev.name, sizeof ev.name, "%s", name);
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

typedef struct HeldNote {
        int level;
        char *text;
} HeldNote;

typedef struct UeventContext {
        int rootfd;
        const Uevent *ev;
        UeventLogFunc log_fn;
        char boot_id[UUID_STRING_MAX];
        bool config_loaded;
        Config *config;  /* NULL: none loaded yet, or it has errors */
        int ledgerfd;
        int lockfd;
        /* A batch: the record changes one event makes under the lock. The
         * directory is fsynced once at its end (context_flush(), before the
         * lock goes), and what the event has to say waits until then, so
         * that nothing is reported done that is not durable. */
        bool batch;
        bool dirty;          /* changed since the last ledger_sync() */
        HeldNote *held;      /* notes held during the batch */
        size_t n_held;
        LedgerEntry *stale;  /* records of an earlier boot: marked lost, or free and dropped */
        size_t n_stale;
} UeventContext;

static void held_free(UeventContext *c) {
        for (size_t i = 0; i < c->n_held; i++)
                free(c->held[i].text);
        free(c->held);
        c->held = NULL;
        c->n_held = 0;
}

static void context_done(UeventContext *c) {
        held_free(c);
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

_printf_(3, 4) static void note(UeventContext *c, int level, const char *fmt, ...) {
        char buf[1536];
        va_list ap;

        if (!c->log_fn)
                return;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        if (c->batch) {
                HeldNote *h = realloc(c->held, (c->n_held + 1) * sizeof *h);
                char *text = strdup(buf);

                if (h)
                        c->held = h;
                if (h && text) {
                        c->held[c->n_held++] = (HeldNote) { .level = level, .text = text };
                        return;
                }
                free(text); /* out of memory: said now rather than lost */
        }
        c->log_fn(level, buf);
}

static const char *config_name(const UeventContext *c) {
        return c->config && c->config->path ? c->config->path : "/" CONFIG_DEFAULT_PATH;
}

/* Loads the config once. Returns 1 with c->config set, or 0 when there is
 * none to act on: a config with errors is reported in one line, and the
 * caller then does only what needs no config (keeping the record true). */
static int context_load_config(UeventContext *c) {
        _cleanup_strv_free_ char **errors = NULL;
        int r;

        if (c->config_loaded)
                return c->config ? 1 : 0;
        c->config_loaded = true;
        r = config_load(c->rootfd, NULL, &c->config, &errors);
        if (r < 0) {
                c->config = NULL;
                if (errors && errors[0])
                        note(c, LOG_ERR, "the config has %zu error(s), so only the record is kept up to date: %s; run 'mdev-hooks check-config'",
                             strv_length(errors), errors[0]);
                else
                        note(c, LOG_ERR, "cannot load the config, so only the record is kept up to date: %s", error_get(r));
                error_clear();
                return 0;
        }
        for (char **w = c->config->warnings; w && *w; w++)
                note(c, LOG_WARNING, "%s", *w);
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
static int context_open_ledger(UeventContext *c) {
        int r;

        if (c->ledgerfd >= 0)
                return 1;
        r = ledger_open_existing(c->rootfd, &c->ledgerfd);
        if (r == -ENOENT)
                return 0;
        return r < 0 ? r : 1;
}

/* --- sysfs, as it is now ------------------------------------------------ */

/* Where an mdev is: 1 with *ret filled, 0 when it does not exist. Right after
 * "add" the mdev_type link may not be there yet (the kernel adds it after the
 * device), so a device whose bus link exists but cannot be read is waited for
 * a little. */
static int mdev_lookup(int rootfd, const char *uuid, SysfsMdev *ret) {
        char path[sizeof "sys/bus/mdev/devices/" + UUID_STRING_MAX];
        int r;

        snprintf(path, sizeof path, "sys/bus/mdev/devices/%s", uuid);
        for (unsigned i = 0;; i++) {
                SysfsMdev m;

                r = sysfs_mdev_get(rootfd, uuid, &m);
                if (r >= 0) {
                        *ret = m;
                        return 1;
                }
                if (r == -ENOENT)
                        return 0; /* no bus link: gone, or never was */
                if (faccessat(rootfd, path, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = -errno;
                        if (r == -ENOENT) {
                                error_clear();
                                return 0;
                        }
                        return error_set(r, "cannot look at '/%s': %s", path, strerror(-r));
                }
                if (i >= SETTLE_TRIES) {
                        char why[512];

                        snprintf(why, sizeof why, "%s", error_get(r));
                        return error_set(r, "'/%s' exists but its parent and type cannot be read: %s", path, why);
                }
                usleep(SETTLE_USEC);
        }
}

/* --- the record ------------------------------------------------------------ */

/* A record of an earlier boot that a batch marked lost or dropped: told in
 * one line per guest or parent at its end (context_flush()), not one per
 * record: after a reboot that is every record of the host. */
static bool record_summarize(UeventContext *c, const LedgerEntry *e) {
        LedgerEntry *l;

        if (!c->batch)
                return false;
        l = realloc(c->stale, (c->n_stale + 1) * sizeof *l);
        if (!l)
                return false; /* told on its own line, then */
        c->stale = l;
        c->stale[c->n_stale++] = *e;
        return true;
}

static int record_drop(UeventContext *c, const LedgerEntry *e, const char *why, bool summarize) {
        int r = c->batch ? ledger_remove_nosync(c->ledgerfd, e->uuid) : ledger_remove(c->ledgerfd, e->uuid);

        if (r < 0)
                return r;
        c->dirty = c->dirty || c->batch;
        if (summarize && record_summarize(c, e))
                return 0;
        note(c, LOG_INFO, "free mdev %s (%s on '%s') %s: record dropped", e->uuid, e->type, e->parent, why);
        return 0;
}

/* boot_id: UUID_STRING_MAX bytes. */
static int record_set(UeventContext *c, LedgerEntry *e, LedgerState state, LedgerOrigin origin, const char *boot_id) {
        e->state = state;
        e->origin = origin;
        if (boot_id != e->boot_id)
                memcpy(e->boot_id, boot_id, sizeof e->boot_id);
        e->since = (uint64_t) time(NULL);
        if (!c->batch)
                return ledger_write(c->ledgerfd, e);
        c->dirty = true;
        return ledger_write_nosync(c->ledgerfd, e);
}

/* recreate = eager: makes a guest's mdev again, with its UUID, type and
 * parent. 1 if it now exists, 0 if not (logged). */
static int mdev_make(UeventContext *c, const LedgerEntry *e) {
        const ConfigType *t = config_parent_type(c->config, e->parent);
        SysfsMdev m;
        int r;

        if (!t || !streq(t->name, e->type)) {
                note(c, LOG_WARNING, "mdev %s of guest '%s' is not made again on '%s': the config has it serve %s%s%s, not '%s'; it is placed when the guest starts",
                     e->uuid, e->guest, e->parent, t ? "'" : "no type", t ? t->name : "", t ? "'" : "", e->type);
                return 0;
        }
        r = sysfs_mdev_create(c->rootfd, e->parent, e->type, e->uuid);
        if (r < 0) {
                note(c, LOG_WARNING, "cannot make mdev %s of guest '%s' (%s on '%s') again: %s; it is made when the guest starts",
                     e->uuid, e->guest, e->type, e->parent, strerror(-r));
                return 0;
        }
        r = mdev_lookup(c->rootfd, e->uuid, &m);
        if (r <= 0 || !streq(m.parent, e->parent) || !streq(m.type, e->type)) {
                note(c, LOG_WARNING, "made mdev %s of guest '%s' (%s on '%s') again, but it did not appear as such: %s",
                     e->uuid, e->guest, e->type, e->parent, r < 0 ? error_get(r) : "not found");
                error_clear();
                return 0;
        }
        return 1;
}

/* Brings one record in line with sysfs. With apply, runs under the lock with
 * the record as it is now, and changes it; without, only says whether it
 * would (1) or not (0), so that an event with nothing to do takes no lock.
 *
 *   the recorded mdev ...              free record   a guest's record
 *   exists, recorded in this boot      kept          kept (lost: the guest's again, borrowed)
 *   exists, recorded in an earlier one dropped       the guest's again, borrowed
 *   is gone (or elsewhere)             dropped       lost (a warning if it was in use this
 *                                                    boot); with recreate: made again
 *
 * "Borrowed": an mdev with the guest's UUID that someone else made (mdevctl,
 * an operator); mdev-hooks uses it for the guest but never removes it. */
static int record_refresh(UeventContext *c, LedgerEntry *e, bool recreate, bool apply) {
        bool this_boot = streq(e->boot_id, c->boot_id);
        SysfsMdev m = { .parent = "" };
        bool found, exists;
        int r;

        r = mdev_lookup(c->rootfd, e->uuid, &m);
        if (r < 0)
                return r;
        found = r > 0;
        exists = found && streq(m.parent, e->parent) && streq(m.type, e->type);

        if (exists) {
                if (this_boot && e->state != LEDGER_LOST)
                        return 0; /* true as it stands */
                if (!apply)
                        return 1;
                /* Lost earlier in this boot, or recorded in an earlier boot:
                 * either way this mdev was made by someone else. */
                if (e->state == LEDGER_FREE) {
                        r = record_drop(c, e, "from an earlier boot was made again by someone else", false);
                        return r < 0 ? r : 1;
                }
                r = record_set(c, e, LEDGER_ASSIGNED, LEDGER_BORROWED, c->boot_id);
                if (r < 0)
                        return r;
                note(c, LOG_NOTICE, "mdev %s of guest '%s' (%s on '%s') exists again: recorded as the guest's, borrowed (mdev-hooks will not remove it)",
                     e->uuid, e->guest, e->type, e->parent);
                return 1;
        }

        /* The recorded mdev no longer exists. */
        recreate = recreate && !found && e->state != LEDGER_FREE;
        if (e->state == LEDGER_LOST && !recreate)
                return 0;
        if (!apply)
                return 1;
        if (e->state == LEDGER_FREE) {
                r = record_drop(c, e, this_boot ? "is gone" : "is from an earlier boot", !this_boot);
                return r < 0 ? r : 1;
        }
        if (recreate) {
                r = mdev_make(c, e);
                if (r < 0)
                        return r;
                if (r > 0) {
                        e->remove_pending = false;
                        r = record_set(c, e, LEDGER_ASSIGNED, LEDGER_CREATED, c->boot_id);
                        if (r < 0)
                                return r;
                        note(c, LOG_NOTICE, "made mdev %s of guest '%s' (%s on '%s') again (recreate = eager)",
                             e->uuid, e->guest, e->type, e->parent);
                        return 1;
                }
                if (e->state == LEDGER_LOST)
                        return 0;
        }

        r = record_set(c, e, LEDGER_LOST, e->origin, e->boot_id);
        if (r < 0)
                return r;
        if (!this_boot && record_summarize(c, e))
                return 1;
        if (!this_boot)
                note(c, LOG_NOTICE, "mdev %s of guest '%s' (%s on '%s') is from an earlier boot: marked lost; it is made again when the guest starts",
                     e->uuid, e->guest, e->type, e->parent);
        else if (found)
                note(c, LOG_WARNING, "mdev %s of guest '%s' is now %s on '%s', not %s on '%s' as recorded: marked lost; run 'mdev-hooks reconcile'",
                     e->uuid, e->guest, m.type, m.parent, e->type, e->parent);
        else if (sysfs_parent_is_registered(c->rootfd, e->parent) == 0)
                note(c, LOG_WARNING, "mdev %s of guest '%s' (%s on '%s') is gone with its parent: marked lost; the guest has lost its device, restart it once the parent is back",
                     e->uuid, e->guest, e->type, e->parent);
        else
                note(c, LOG_WARNING, "mdev %s of guest '%s' (%s on '%s') was removed outside mdev-hooks: marked lost; the guest has lost its device, restart it or run 'mdev-hooks reconcile'",
                     e->uuid, e->guest, e->type, e->parent);
        return 1;
}

/* Lost ones by guest, dropped ones by parent; dropped ones first. */
static int stale_compare(const void *a, const void *b) {
        const LedgerEntry *x = a, *y = b;
        bool lost = x->state == LEDGER_LOST;
        int k = (int) lost - (int) (y->state == LEDGER_LOST);

        if (k == 0)
                k = lost ? strcmp(x->guest, y->guest) : strcmp(x->parent, y->parent);
        return k != 0 ? k : strcmp(x->uuid, y->uuid);
}

/* What record_summarize() gathered: one line per guest whose mdevs were
 * marked lost, one per parent whose free records were dropped, naming the
 * UUIDs (a guest's long list goes on as many lines as it needs). */
static void stale_tell(UeventContext *c) {
        if (c->n_stale > 1)
                qsort(c->stale, c->n_stale, sizeof *c->stale, stale_compare);
        for (size_t i = 0; i < c->n_stale;) {
                const LedgerEntry *first = &c->stale[i];
                bool lost = first->state == LEDGER_LOST;
                char line[1024] = "";
                size_t len = 0, k = 0;

                for (; i < c->n_stale; i++) {
                        const LedgerEntry *e = &c->stale[i];
                        char item[UUID_STRING_MAX + 2 * NAME_STRING_MAX + 16];

                        if ((e->state == LEDGER_LOST) != lost ||
                            !streq(lost ? e->guest : e->parent, lost ? first->guest : first->parent))
                                break;
                        if (lost)
                                snprintf(item, sizeof item, "%s (%s on '%s')", e->uuid, e->type, e->parent);
                        else
                                snprintf(item, sizeof item, "%s (%s)", e->uuid, e->type);
                        if (k > 0 && len + 2 + strlen(item) >= sizeof line)
                                break; /* the rest on the next line */
                        len += (size_t) snprintf(line + len, sizeof line - len, "%s%s", k > 0 ? ", " : "", item);
                        k++;
                }
                if (lost)
                        note(c, LOG_NOTICE, "%zu mdev(s) of guest '%s' from an earlier boot marked lost; they are made again when the guest starts: %s",
                             k, first->guest, line);
                else
                        note(c, LOG_INFO, "%zu free mdev(s) on '%s' from an earlier boot: records dropped: %s", k, first->parent, line);
        }
        free(c->stale);
        c->stale = NULL;
        c->n_stale = 0;
}

/* Ends a batch, before the lock is released: fsyncs the record directory
 * once if anything changed, then says what the event did. */
static int context_flush(UeventContext *c) {
        int r = 0;

        if (!c->batch)
                return 0;
        if (c->dirty)
                r = ledger_sync(c->ledgerfd);
        c->batch = c->dirty = false;
        for (size_t i = 0; i < c->n_held; i++)
                if (c->log_fn)
                        c->log_fn(c->held[i].level, c->held[i].text);
        held_free(c);
        stale_tell(c);
        return r;
}

/* A record from an earlier boot that still claims an mdev exists. */
static bool record_is_stale(const UeventContext *c, const LedgerEntry *e) {
        return !streq(e->boot_id, c->boot_id) && e->state != LEDGER_LOST;
}

/* Every record, read without the lock (a reader may see the old or the new
 * file, never a torn one). None when there is no record directory. */
/* Every record, or only those of one parent (parent not NULL). */
static int records_scan(UeventContext *c, const char *parent, LedgerEntry **ret, size_t *ret_n) {
        size_t bad = 0;
        int r;

        *ret = NULL;
        *ret_n = 0;
        r = context_open_ledger(c);
        if (r <= 0)
                return r;
        r = parent ? ledger_list_parent(c->ledgerfd, parent, ret, ret_n, &bad)
                   : ledger_list(c->ledgerfd, ret, ret_n, &bad);
        if (r < 0)
                return r;
        if (bad > 0)
                note(c, LOG_WARNING, "%zu record file(s) in '/" LEDGER_DIR "' do not parse and are left alone; run 'mdev-hooks reconcile'", bad);
        return 0;
}

/* Reads a record again under the lock. 1 with *ret, 0 when it is gone or
 * belongs to another parent by now. */
static int record_reread(UeventContext *c, const char *uuid, const char *parent, LedgerEntry *ret) {
        int r = ledger_read(c->ledgerfd, uuid, ret);

        if (r == -ENOENT)
                return 0;
        if (r == -EBADMSG) {
                note(c, LOG_WARNING, "%s; left alone", error_get(r));
                error_clear();
                return 0;
        }
        if (r < 0)
                return r;
        return !parent || streq(ret->parent, parent);
}

/* The sweep of the records from an earlier boot is done once per boot, by
 * the first event that finds it to do; this mark (under run/, which a boot
 * empties) holds the boot id once nothing is left. */
static bool sweep_is_done(const UeventContext *c) {
        char buf[UUID_STRING_MAX + 2];

        return read_small_at(c->rootfd, SWEEP_MARK, buf, sizeof buf) >= 0 && streq(buf, c->boot_id);
}

static void sweep_mark_done(UeventContext *c) {
        char buf[UUID_STRING_MAX + 2];
        _cleanup_close_ int fd = -1;

        snprintf(buf, sizeof buf, "%s\n", c->boot_id);
        (void) mkdir_p_at(c->rootfd, "run/mdev-hooks", 0755);
        fd = openat(c->rootfd, SWEEP_MARK, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
        if (fd < 0 || write(fd, buf, strlen(buf)) != (ssize_t) strlen(buf))
                note(c, LOG_DEBUG, "cannot write '/" SWEEP_MARK "': %s", strerror(errno));
}

/* Once the sweep is done, events read only their parent's records, through
 * the record's parent index. The sweep has read every record (list, n):
 * first put back the index entries that a power loss (the index is not
 * fsynced) or a record written by hand left out, so that those events miss
 * none. */
static void sweep_finish(UeventContext *c, const LedgerEntry *list, size_t n) {
        int r = c->ledgerfd >= 0 ? ledger_index_parent_check(c->ledgerfd, list, n) : 0;

        if (r < 0) {
                note(c, LOG_WARNING, "%s", error_get(r));
                error_clear();
                return; /* the next event sweeps again */
        }
        sweep_mark_done(c);
}

/* --- parents ---------------------------------------------------------------- */

static char *strv_join_comma(char **l) {
        size_t len = 1;
        char *s, *p;

        for (char **i = l; i && *i; i++)
                len += strlen(*i) + 2;
        s = p = malloc(len);
        if (!s)
                return NULL;
        *p = '\0';
        for (char **i = l; i && *i; i++)
                p += sprintf(p, "%s%s", i == l ? "" : ", ", *i);
        return s;
}

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
                note(c, LOG_WARNING, "cannot read the types it offers: %s", error_get(r));
                error_clear();
                return;
        }
        if (strv_contains(types, t->name))
                return;
        listed = config_parent_is_listed(c->config, parent);
        offered = strv_join_comma(types);
        note(c, listed ? LOG_WARNING : LOG_INFO,
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

/* registered / unregistered. The parent's own records are brought in line
 * with sysfs (with recreate = eager, a registered parent's lost mdevs are made
 * again). Records of other parents from an earlier boot are stale whatever
 * their parent does, so the first event after a boot sweeps them too, for a
 * bounded time; an event that waits for the lock meanwhile looks every
 * UEVENT_WAIT_SLICE_USEC whether its work is done, and goes. At boot, N parents registering cost
 * about one sweep, not N. */
static int parent_changed(UeventContext *c, bool registered) {
        const char *parent = c->ev->name;
        _cleanup_free_ LedgerEntry *list = NULL;
        unsigned long long deadline, wait_until;
        bool eager, swept, cut = false;
        unsigned timeout;
        size_t n = 0;
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

        /* The boot's sweep still to do: the event that gets the lock at once
         * does it, reading every record under the lock. The others read only
         * their parent's records and wait: at boot, hundreds of events each
         * reading a thousand records would cost more than the sweep. */
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

                /* Only the parent's own records can need a change (or the
                 * sweep, which another event is doing): on a host with a
                 * thousand records, parse only those, and take no lock if
                 * nothing needs one. */
                free(steal_pointer(&list));
                r = records_scan(c, parent, &list, &n);
                if (r < 0)
                        return r;
                r = parent_pending(c, parent, eager, list, n, false);
                if (r <= 0)
                        return r;

                r = parent_wait_lock(c, wait_until, eager, list, n);
                if (r == 0 && !listed_swept)
                        continue; /* swept meanwhile: list again, through the index the sweep has made whole */
                if (r == 0)
                        return 0; /* done by another event meanwhile */
                if (r == -ETIMEDOUT) {
                        char msg[512];

                        snprintf(msg, sizeof msg, "%s", error_get(r));
                        return error_set(r, "gave up after %u s: %s", timeout, msg);
                }
                if (r < 0)
                        return r;
        }
        c->batch = true; /* ended by context_flush() under the lock */

        swept = sweep_is_done(c);
        if (!swept) {
                /* The sweep is this event's: every record, read under the lock. */
                free(steal_pointer(&list));
                r = records_scan(c, NULL, &list, &n);
                if (r < 0)
                        return r;
        }
        deadline = now_usec() + UEVENT_SWEEP_USEC;
        /* This parent's records first, then the sweep. */
        for (int pass = 0; pass < 2 && !cut; pass++)
                for (size_t i = 0; i < n; i++) {
                        bool own = streq(list[i].parent, parent);
                        LedgerEntry e;

                        if (pass == 0 ? !own : (own || swept || !record_is_stale(c, &list[i])))
                                continue;
                        if (pass == 1 && now_usec() > deadline) {
                                cut = true;
                                break;
                        }
                        r = record_reread(c, list[i].uuid, list[i].parent, &e);
                        if (r < 0)
                                return r;
                        if (r == 0 || (pass == 1 && !record_is_stale(c, &e)))
                                continue;
                        r = record_refresh(c, &e, eager && (own || sysfs_parent_is_registered(c->rootfd, e.parent) > 0), true);
                        if (r < 0)
                                return r;
                }
        if (!swept && !cut)
                sweep_finish(c, list, n);
        return 0;
}

/* --- mdevs ------------------------------------------------------------------ */

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

/* --- SR-IOV physical functions ---------------------------------------------- */

/* 1 if the config's text names the address at all (any case), 0 if not or
 * there is no config. Spares every other PCI device the parse. */
static int config_mentions(int rootfd, const char *address) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;

        fd = openat(rootfd, CONFIG_DEFAULT_PATH, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? 0 : 1; /* let config_load() say what is wrong */
        text = malloc(CONFIG_TEXT_MAX + 1);
        if (!text)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(fd, text + len, CONFIG_TEXT_MAX - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return 1;
                if (n == 0 || (len += (size_t) n) >= CONFIG_TEXT_MAX)
                        break;
        }
        text[len] = '\0';
        return strcasestr(text, address) ? 1 : 0;
}

static const ConfigSriovPf *config_find_pf(const Config *cfg, const char *address) {
        for (size_t i = 0; i < cfg->n_sriov; i++)
                if (strcasecmp(cfg->sriov[i].address, address) == 0)
                        return &cfg->sriov[i];
        return NULL;
}

static void emit_lines(UeventContext *c, const char *command, char *buf, size_t *len, bool all) {
        char *start = buf, *nl;

        while ((nl = memchr(start, '\n', *len - (size_t) (start - buf)))) {
                *nl = '\0';
                if (*start)
                        note(c, LOG_NOTICE, "'%s': %s", command, start);
                start = nl + 1;
        }
        *len -= (size_t) (start - buf);
        memmove(buf, start, *len);
        if (all && *len > 0) {
                buf[*len] = '\0';
                note(c, LOG_NOTICE, "'%s': %s", command, buf);
                *len = 0;
        }
}

/* Runs `command "$1"` with $1 = arg through /bin/sh, its stdout and stderr
 * logged line by line, killed (with its process group) after timeout_sec.
 * Returns 1 if it exited 0, 0 if it failed (logged), <0 if it could not run. */
static int command_run(UeventContext *c, const char *command, const char *arg, unsigned timeout_sec) {
        _cleanup_free_ char *script = strdup_printf("%s \"$1\"", command);
        unsigned long long deadline = now_usec() + (unsigned long long) timeout_sec * 1000000ULL;
        _cleanup_close_ int rfd = -1;
        char buf[1024];
        size_t len = 0;
        bool timed_out = false;
        int pipefd[2], status = 0;
        pid_t pid;

        if (!script)
                return -ENOMEM;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return error_set(-errno, "cannot run '%s': %s", command, strerror(errno));
        pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return error_set(r, "cannot run '%s': %s", command, strerror(-r));
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);

                (void) setpgid(0, 0);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(pipefd[1], STDOUT_FILENO) < 0 ||
                    dup2(pipefd[1], STDERR_FILENO) < 0)
                        _exit(127);
                /* udev runs us with the event's properties only. */
                if (!getenv("PATH"))
                        (void) setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
                execl("/bin/sh", "sh", "-c", script, "sh", arg, (char *) NULL);
                _exit(127);
        }
        (void) setpgid(pid, pid);
        close(pipefd[1]);
        rfd = pipefd[0];

        for (;;) {
                struct pollfd p = { .fd = rfd, .events = POLLIN };
                unsigned long long now = now_usec();
                ssize_t n;

                if (now >= deadline) {
                        timed_out = true;
                        break;
                }
                n = poll(&p, 1, (int) ((deadline - now + 999) / 1000));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        continue; /* the deadline check above ends it */
                n = read(rfd, buf + len, sizeof buf - 1 - len);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0)
                        break; /* EOF: the command and its children closed their output */
                len += (size_t) n;
                emit_lines(c, command, buf, &len, len >= sizeof buf - 1);
        }
        emit_lines(c, command, buf, &len, true);

        /* The output is closed; give the command what is left of its time to exit. */
        for (;;) {
                pid_t w = waitpid(pid, &status, WNOHANG);

                if (w == pid)
                        break;
                if (w < 0 && errno != EINTR)
                        return error_set(-errno, "cannot wait for '%s': %s", command, strerror(errno));
                if (timed_out || now_usec() >= deadline) {
                        timed_out = true;
                        (void) kill(-pid, SIGKILL);
                        (void) kill(pid, SIGKILL);
                        (void) waitpid(pid, &status, 0);
                        break;
                }
                usleep(10000);
        }
        if (timed_out) {
                (void) kill(-pid, SIGKILL); /* anything it left behind */
                note(c, LOG_ERR, "'%s %s' did not finish within %u s and was killed", command, arg, timeout_sec);
                return 0;
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 1;
        if (WIFEXITED(status))
                note(c, LOG_ERR, "'%s %s' failed with exit status %d", command, arg, WEXITSTATUS(status));
        else
                note(c, LOG_ERR, "'%s %s' was killed by signal %d", command, arg, WTERMSIG(status));
        return 0;
}

/* [sriov] command: run once per boot and PF. A mark under run/mdev-hooks/sriov/
 * (flocked while the command runs, then holding the boot id) makes a repeated
 * or concurrent event (add, then bind) do nothing. */
static int sriov_command(UeventContext *c, const char *address) {
        const char *command = c->config->sriov_command;
        char mark[sizeof SRIOV_MARK_DIR + NAME_STRING_MAX + 1], done[UUID_STRING_MAX + 2];
        _cleanup_close_ int fd = -1;
        ssize_t n;
        int r;

        r = mkdir_p_at(c->rootfd, SRIOV_MARK_DIR, 0755);
        if (r < 0)
                return error_set(r, "cannot create '/" SRIOV_MARK_DIR "': %s", strerror(-r));
        snprintf(mark, sizeof mark, SRIOV_MARK_DIR "/%s", address);
        fd = openat(c->rootfd, mark, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
        if (fd < 0)
                return error_set(-errno, "cannot open '/%s': %s", mark, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK)
                        return error_set(-errno, "cannot lock '/%s': %s", mark, strerror(errno));
                note(c, LOG_INFO, "'%s' is already running for it (another event)", command);
                return 0;
        }
        n = pread(fd, done, sizeof done - 1, 0);
        done[n > 0 ? n : 0] = '\0';
        done[strcspn(done, "\n")] = '\0';
        if (streq(done, c->boot_id)) {
                note(c, LOG_DEBUG, "'%s' already ran for it in this boot", command);
                return 0;
        }

        note(c, LOG_INFO, "running '%s %s'", command, address);
        r = command_run(c, command, address, UEVENT_COMMAND_TIMEOUT);
        if (r <= 0)
                return r; /* no mark: the next event tries again */
        snprintf(done, sizeof done, "%s\n", c->boot_id);
        if (ftruncate(fd, 0) < 0 || pwrite(fd, done, strlen(done), 0) != (ssize_t) strlen(done))
                note(c, LOG_WARNING, "cannot write '/%s': %s; a repeated event runs the command again", mark, strerror(errno));
        note(c, LOG_NOTICE, "enabled its virtual functions with '%s %s'", command, address);
        return 0;
}

static int pci_appeared(UeventContext *c) {
        const char *address = c->ev->name;
        char dir[sizeof "sys/bus/pci/devices/" + NAME_STRING_MAX], path[sizeof dir + 32], num[32];
        const ConfigSriovPf *pf;
        unsigned total, numvfs, want;
        int r;

        /* Most PCI devices: not in the config at all. */
        r = config_mentions(c->rootfd, address);
        if (r <= 0)
                return r;
        if (context_load_config(c) <= 0)
                return 0;
        pf = config_find_pf(c->config, address);
        if (!pf)
                return 0;

        snprintf(dir, sizeof dir, "sys/bus/pci/devices/%s", address);
        snprintf(path, sizeof path, "%s/sriov_totalvfs", dir);
        r = read_small_at(c->rootfd, path, num, sizeof num);
        if (r >= 0)
                r = safe_atou(num, &total);
        if (r < 0) {
                note(c, LOG_WARNING, "%s names it in [sriov], but it is not an SR-IOV physical function ('/%s': %s)",
                     config_name(c), path, strerror(-r));
                return 0;
        }
        snprintf(path, sizeof path, "%s/sriov_numvfs", dir);
        r = read_small_at(c->rootfd, path, num, sizeof num);
        if (r >= 0)
                r = safe_atou(num, &numvfs);
        if (r < 0)
                return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        if (numvfs > 0) {
                note(c, LOG_DEBUG, "%u virtual functions are enabled already", numvfs);
                return 0;
        }
        /* At coldplug, "add" comes with the driver bound; at driver load,
         * "bind" follows "add". Neither the kernel nor a vendor tool can
         * enable VFs without the PF's driver. */
        snprintf(path, sizeof path, "%s/driver", dir);
        if (c->ev->add && faccessat(c->rootfd, path, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
                note(c, LOG_INFO, "no driver bound yet: its virtual functions are enabled when one binds");
                return 0;
        }
        r = boot_id_read(c->rootfd, c->boot_id);
        if (r < 0)
                return r;

        if (c->config->sriov_command)
                return sriov_command(c, address);

        want = pf->max ? total : pf->numvfs;
        if (want == 0)
                return 0;
        if (want > total) {
                note(c, LOG_ERR, "%s asks for %u virtual functions in [sriov], but it offers at most %u (sriov_totalvfs): none enabled",
                     config_name(c), want, total);
                return 0;
        }
        snprintf(num, sizeof num, "%u", want);
        snprintf(path, sizeof path, "%s/sriov_numvfs", dir);
        r = write_string_at(c->rootfd, path, num);
        if (r == -EBUSY) {
                /* Another event enabled them meanwhile (the kernel refuses a
                 * second write while VFs are enabled). */
                char again[32];
                if (read_small_at(c->rootfd, path, again, sizeof again) >= 0 && safe_atou(again, &numvfs) >= 0 && numvfs > 0)
                        return 0;
        }
        if (r < 0) {
                note(c, LOG_ERR, "cannot enable %u virtual functions: writing '/%s' failed: %s", want, path, strerror(-r));
                return 0;
        }
        note(c, LOG_NOTICE, "enabled %u virtual functions", want);
        return 0;
}

int uevent_handle(int rootfd, const Uevent *ev, UeventLogFunc log_fn) {
        _cleanup_(context_done) UeventContext c = {
                .rootfd = rootfd,
                .ev = ev,
                .log_fn = log_fn,
                .ledgerfd = -1,
                .lockfd = -1,
        };

        int r, k;

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
        /* Still under the lock, if taken (context_done() lets it go). */
        if (r < 0) {
                char msg[1024];

                snprintf(msg, sizeof msg, "%s", error_get(r));
                (void) context_flush(&c);
                error_clear();
                return error_set(r, "%s", msg);
        }
        k = context_flush(&c);
        return k < 0 ? k : r;
}
