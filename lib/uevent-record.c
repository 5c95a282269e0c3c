/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The record as the udev helper changes it (uevent-internal.h): a record
 * compared with sysfs and made true (record_refresh()), what a batch changed
 * told once at its end, and the sweep of the records of an earlier boot.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <syslog.h>

#include "ledger.h"
#include "log.h"
#include "sysfs.h"
#include "backend.h"
#include "uevent-internal.h"

/* How long an mdev may look half made (bus link present, mdev_type link not
 * yet) before we stop waiting for sysfs to settle: 50 x 10 ms. */
#define SETTLE_TRIES 50
#define SETTLE_USEC 10000
#define SWEEP_MARK "run/mdev-hooks/swept"     /* under the root */

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

                r = backend_mdev.device_get(rootfd, uuid, &m);
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
                if (i >= SETTLE_TRIES)
                        return error_prefix(r, "'/%s' exists but its parent and type cannot be read", path);
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

int record_drop(UeventContext *c, const LedgerEntry *e, const char *why, bool summarize) {
        int r = c->batch ? ledger_remove_nosync(c->ledgerfd, e->uuid) : ledger_remove(c->ledgerfd, e->uuid);

        if (r < 0)
                return r;
        c->dirty = c->dirty || c->batch;
        if (summarize && record_summarize(c, e))
                return 0;
        log_msg(LOG_INFO, "free mdev %s (%s on '%s') %s: record dropped", e->uuid, e->type, e->parent, why);
        return 0;
}

/* boot_id: UUID_STRING_MAX bytes. */
int record_set(UeventContext *c, LedgerEntry *e, LedgerState state, LedgerOrigin origin, const char *boot_id) {
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
                log_msg(LOG_WARNING, "mdev %s of guest '%s' is not made again on '%s': the config has it serve %s%s%s, not '%s'; it is placed when the guest starts",
                     e->uuid, e->guest, e->parent, t ? "'" : "no type", t ? t->name : "", t ? "'" : "", e->type);
                return 0;
        }
        r = backend_mdev.device_make(c->rootfd, e->parent, e->type, e->uuid);
        if (r < 0) {
                log_msg(LOG_WARNING, "cannot make mdev %s of guest '%s' (%s on '%s') again: %s; it is made when the guest starts",
                     e->uuid, e->guest, e->type, e->parent, strerror(-r));
                return 0;
        }
        r = mdev_lookup(c->rootfd, e->uuid, &m);
        if (r <= 0 || !streq(m.parent, e->parent) || !streq(m.type, e->type)) {
                log_msg(LOG_WARNING, "made mdev %s of guest '%s' (%s on '%s') again, but it did not appear as such: %s",
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
/* The type the device of key carries now, "" when none (backend.h). */
void device_type_now(UeventContext *c, const Backend *b, const char *key, char type[NAME_STRING_MAX]) {
        SysfsMdev m;

        type[0] = '\0';
        if (b->device_get(c->rootfd, key, &m) >= 0)
                snprintf(type, NAME_STRING_MAX, "%s", m.type);
        else
                error_clear(); /* no such device (now): nothing on it */
}

/* recreate = eager: programs a guest's VF with its recorded type again. 1
 * if it now carries it, 0 if not (logged). */
static int vf_make(UeventContext *c, const Backend *b, LedgerEntry *e) {
        char type[NAME_STRING_MAX];
        int r;

        r = b->device_make(c->rootfd, e->parent, e->type, e->uuid);
        if (r < 0) {
                log_msg(LOG_WARNING, "cannot program VF %s of guest '%s' with %s again: %s; it is programmed when the guest starts",
                     e->uuid, e->guest, e->type, strerror(-r));
                return 0;
        }
        device_type_now(c, b, e->uuid, type);
        if (!streq(type, e->type)) {
                log_msg(LOG_WARNING, "programmed VF %s of guest '%s' with %s again, but it carries '%s'; it is programmed when the guest starts",
                     e->uuid, e->guest, e->type, type);
                return 0;
        }
        e->has_placement = false;
        if (b->device_record && c->config)
                b->device_record(c->config, c->rootfd, e);
        return 1;
}

/* recreate = eager: makes a guest's device again, with its key, type and
 * parent, and records it as the guest's in this boot. 1 if it now exists,
 * 0 if not (logged), -errno. */
static int record_remake(UeventContext *c, const Backend *b, LedgerEntry *e) {
        int r = b == &backend_mdev ? mdev_make(c, e) : vf_make(c, b, e);

        if (r <= 0)
                return r;
        e->remove_pending = false;
        r = record_set(c, e, LEDGER_ASSIGNED, LEDGER_CREATED, c->boot_id);
        if (r < 0)
                return r;
        c->made++;
        log_msg(LOG_NOTICE, "made %s %s of guest '%s' (%s on '%s') again (recreate = eager)",
             b->noun, e->uuid, e->guest, e->type, e->parent);
        return 1;
}

/* record_refresh() for a device of a backend other than mdev's, such as a
 * vGPU of NVIDIA's VFIO framework (the record's key is its VF, vgpu.h):
 * true while the device carries the recorded type in this boot; otherwise
 * a free record is dropped and a guest's is marked lost (its next start
 * programs the VF again) or, with recreate and a VF that carries nothing,
 * programmed again now. */
static int vf_record_refresh(UeventContext *c, const Backend *b, LedgerEntry *e, bool recreate, bool apply) {
        bool this_boot = streq(e->boot_id, c->boot_id);
        char type[NAME_STRING_MAX], boot[UUID_STRING_MAX];
        int r;

        device_type_now(c, b, e->uuid, type);
        if (this_boot && streq(type, e->type) && e->state != LEDGER_LOST)
                return 0; /* true as it stands */
        recreate = recreate && b->device_make && !type[0] && e->state != LEDGER_FREE;
        if (e->state == LEDGER_LOST && !recreate)
                return 0; /* lost already: its guest's start programs it */
        if (!apply)
                return 1;
        if (e->state == LEDGER_FREE) {
                r = record_drop(c, e, this_boot ? "is gone" : "is from an earlier boot", !this_boot);
                return r < 0 ? r : 1;
        }
        if (recreate) {
                r = record_remake(c, b, e);
                if (r != 0)
                        return r;
                if (e->state == LEDGER_LOST)
                        return 0;
        }
        memcpy(boot, e->boot_id, sizeof boot); /* kept: a VF made again is not mdev-hooks' */
        r = record_set(c, e, LEDGER_LOST, e->origin, boot);
        if (r < 0)
                return r;
        if (!this_boot && record_summarize(c, e))
                return 1;
        log_msg(LOG_NOTICE, "%s %s of guest '%s' (%s on '%s') is gone: marked lost; the guest's next start programs its VF again",
             b->noun, e->uuid, e->guest, e->type, e->parent);
        return 1;
}

/* Says why a guest's mdev was marked lost: m, what has its UUID now (NULL:
 * nothing). */
static void lost_tell(UeventContext *c, const LedgerEntry *e, bool this_boot, const SysfsMdev *m) {
        if (!this_boot)
                log_msg(LOG_NOTICE, "mdev %s of guest '%s' (%s on '%s') is from an earlier boot: marked lost; it is made again when the guest starts",
                     e->uuid, e->guest, e->type, e->parent);
        else if (m)
                log_msg(LOG_WARNING, "mdev %s of guest '%s' is now %s on '%s', not %s on '%s' as recorded: marked lost; run 'mdev-hooks reconcile'",
                     e->uuid, e->guest, m->type, m->parent, e->type, e->parent);
        else if (sysfs_parent_is_registered(c->rootfd, e->parent) == 0)
                log_msg(LOG_WARNING, "mdev %s of guest '%s' (%s on '%s') is gone with its parent: marked lost; the guest has lost its device, restart it once the parent is back",
                     e->uuid, e->guest, e->type, e->parent);
        else
                log_msg(LOG_WARNING, "mdev %s of guest '%s' (%s on '%s') was removed outside mdev-hooks: marked lost; the guest has lost its device, restart it or run 'mdev-hooks reconcile'",
                     e->uuid, e->guest, e->type, e->parent);
}

int record_refresh(UeventContext *c, LedgerEntry *e, bool recreate, bool apply) {
        bool this_boot = streq(e->boot_id, c->boot_id);
        SysfsMdev m = { .parent = "" };
        bool found, exists;
        int r;

        const Backend *b = backend_of_record(e->uuid, e->type);

        if (b && b != &backend_mdev)
                return vf_record_refresh(c, b, e, recreate, apply);

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
                log_msg(LOG_NOTICE, "mdev %s of guest '%s' (%s on '%s') exists again: recorded as the guest's, borrowed (mdev-hooks will not remove it)",
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
                r = record_remake(c, &backend_mdev, e);
                if (r != 0)
                        return r;
                if (e->state == LEDGER_LOST)
                        return 0;
        }

        r = record_set(c, e, LEDGER_LOST, e->origin, e->boot_id);
        if (r < 0)
                return r;
        if (!this_boot && record_summarize(c, e))
                return 1;
        lost_tell(c, e, this_boot, found ? &m : NULL);
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
                        log_msg(LOG_NOTICE, "%zu mdev(s) of guest '%s' from an earlier boot marked lost; they are made again when the guest starts: %s",
                             k, first->guest, line);
                else
                        log_msg(LOG_INFO, "%zu free mdev(s) on '%s' from an earlier boot: records dropped: %s", k, first->parent, line);
        }
        free(c->stale);
        c->stale = NULL;
        c->n_stale = 0;
}

/* Ends a batch, before the lock is released: fsyncs the record directory
 * once if anything changed, then says what the event did. */
int context_flush(UeventContext *c) {
        int r = 0;

        if (!c->batch)
                return 0;
        if (c->dirty)
                r = ledger_sync(c->ledgerfd);
        c->batch = c->dirty = false;
        log_release();
        stale_tell(c);
        return r;
}

/* A record from an earlier boot that still claims an mdev exists. */
bool record_is_stale(const UeventContext *c, const LedgerEntry *e) {
        return !streq(e->boot_id, c->boot_id) && e->state != LEDGER_LOST;
}

/* Every record, or only those of one parent (parent not NULL), read without
 * the lock (a reader may see the old or the new file, never a torn one).
 * None when there is no record directory. */
int records_scan(UeventContext *c, const char *parent, LedgerEntry **ret, size_t *ret_n) {
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
                log_msg(LOG_WARNING, "%zu record file(s) in '/" LEDGER_DIR "' do not parse and are left alone; run 'mdev-hooks reconcile'", bad);
        return 0;
}

/* Reads a record again under the lock. 1 with *ret, 0 when it is gone or
 * belongs to another parent by now. */
int record_reread(UeventContext *c, const char *uuid, const char *parent, LedgerEntry *ret) {
        int r = ledger_read(c->ledgerfd, uuid, ret);

        if (r == -ENOENT)
                return 0;
        if (r == -EBADMSG) {
                log_msg(LOG_WARNING, "%s; left alone", error_get(r));
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
bool sweep_is_done(const UeventContext *c) {
        char buf[UUID_STRING_MAX + 2];

        return read_small_at(c->rootfd, SWEEP_MARK, buf, sizeof buf) >= 0 && streq(buf, c->boot_id);
}

void sweep_mark_done(UeventContext *c) {
        char buf[UUID_STRING_MAX + 2];
        _cleanup_close_ int fd = -1;

        snprintf(buf, sizeof buf, "%s\n", c->boot_id);
        (void) mkdir_p_at(c->rootfd, "run/mdev-hooks", 0755);
        fd = openat(c->rootfd, SWEEP_MARK, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
        if (fd < 0 || write(fd, buf, strlen(buf)) != (ssize_t) strlen(buf))
                log_msg(LOG_DEBUG, "cannot write '/" SWEEP_MARK "': %s", strerror(errno));
}

/* Once the sweep is done, events read only their parent's records, through
 * the record's parent index. The sweep has read every record (list, n):
 * first put back the index entries that a power loss (the index is not
 * fsynced) or a record written by hand left out, so that those events miss
 * none. */
void sweep_finish(UeventContext *c, const LedgerEntry *list, size_t n) {
        int r = c->ledgerfd >= 0 ? ledger_index_parent_check(c->ledgerfd, list, n) : 0;

        if (r < 0) {
                log_msg(LOG_WARNING, "%s", error_get(r));
                error_clear();
                return; /* the next event sweeps again */
        }
        sweep_mark_done(c);
}
