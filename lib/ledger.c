/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The record's store: one INI file per mdev under var/lib/mdev-hooks/
 * (ledger.h; its text: ledger-record.c).
 *
 * Files are replaced atomically: a temporary file ".<uuid>.<pid>.tmp" in the
 * same directory, fsync, renameat over the record, fsync of the directory
 * (for a batch, once at its end: ledger_sync()).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "guestindex.h"
#include "ledger.h"
#include "ledger-internal.h"

static int ledger_open_dir(int rootfd, int *ret_dirfd) {
        int fd = openat(rootfd, LEDGER_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        *ret_dirfd = fd;
        return 0;
}

int ledger_open(int rootfd, int *ret_dirfd) {
        int r;

        r = ledger_open_dir(rootfd, ret_dirfd);
        if (r != -ENOENT)
                goto out;
        r = mkdir_p_at(rootfd, LEDGER_DIR, 0700);
        if (r < 0)
                return error_set(r, "cannot create '/" LEDGER_DIR "': %s", strerror(-r));
        r = ledger_open_dir(rootfd, ret_dirfd);
out:
        if (r < 0)
                return error_set(r, "cannot open '/" LEDGER_DIR "': %s", strerror(-r));
        return 0;
}

int ledger_open_existing(int rootfd, int *ret_dirfd) {
        int r = ledger_open_dir(rootfd, ret_dirfd);

        if (r < 0 && r != -ENOENT)
                return error_set(r, "cannot open '/" LEDGER_DIR "': %s", strerror(-r));
        return r;
}

/* A record is a few hundred bytes; anything near this is not one of ours. */
#define LEDGER_FILE_MAX 4096

static int ledger_load(int dirfd, const char *uuid, char buf[LEDGER_FILE_MAX]) {
        _cleanup_close_ int fd = -1;
        size_t len = 0;

        fd = openat(dirfd, uuid, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0) {
                if (errno == ENOENT)
                        return -ENOENT;
                return error_set(-errno, "cannot open '/" LEDGER_DIR "/%s': %s", uuid, strerror(errno));
        }
        for (;;) {
                ssize_t n = read(fd, buf + len, LEDGER_FILE_MAX - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return error_set(-errno, "cannot read '/" LEDGER_DIR "/%s': %s", uuid, strerror(errno));
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len >= LEDGER_FILE_MAX - 1)
                        return error_set(-EBADMSG, "'/" LEDGER_DIR "/%s' is too large to be a record", uuid);
        }
        buf[len] = '\0';
        if (memchr(buf, '\0', len))
                return error_set(-EBADMSG, "'/" LEDGER_DIR "/%s' holds a NUL byte", uuid);
        return 0;
}

int ledger_read(int dirfd, const char *uuid, LedgerEntry *ret) {
        char buf[LEDGER_FILE_MAX];
        int r;

        if (!ledger_key_is_valid(uuid))
                return error_set(-EINVAL, "'%s' is not a UUID", uuid);
        r = ledger_load(dirfd, uuid, buf);
        if (r < 0)
                return r;
        return ledger_parse(uuid, buf, ret);
}

/* --- the guest index ------------------------------------------------------
 *
 * var/lib/mdev-hooks.by-guest/<hash of the guest name>/<uuid>: names (hard
 * links to one empty file, see index_entry_add()), a hint that lets release
 * find a guest's records without reading every record on a host with a
 * thousand. ledger_write() adds the entry BEFORE it renames
 * the record into place, so the index never lacks a record that ledger_write
 * gave to a guest; entries whose record is gone or now names another guest
 * are dropped lazily by ledger_list_guest(), which verifies every entry by
 * reading the record. The index is not fsynced: after a power loss the only
 * records it could miss are of an earlier boot, whose mdevs no longer exist
 * (the udev helper and reconcile deal with those). */
#define INDEX_DIR "../mdev-hooks.by-guest" /* relative to the record directory */
_Static_assert(sizeof(LEDGER_DIR ".by-guest") == sizeof(GUEST_INDEX_DIR), "one index");

static void guest_hash(const char *guest, char out[GUEST_INDEX_HASH_MAX]) {
        guest_index_hash(guest, out);
}

/* Longest index path: the parent index's build directory, a name, a UUID. */
#define INDEX_PATH_MAX (sizeof "../.mdev-hooks.by-parent.tmp" + NAME_STRING_MAX + UUID_STRING_MAX + 2)

/* An entry is a name, not a file of its own: a hard link to one empty file,
 * <root>/INDEX_ANCHOR. A link costs a directory entry; a new file costs an
 * inode, which ext4 can be slow to find (it skips recently deleted ones;
 * BENCHMARKS.md, "Where the time goes"), three per record written. '@' is
 * in no parent's name (name_is_valid()) and in no guest's hash, so the
 * anchor is never taken for a key. */
#define INDEX_ANCHOR "@entry"

/* The entry as an empty file, where the file system will not link (EMLINK
 * on an anchor with 65000 links, EPERM where there are no hard links). */
static int index_entry_create(int dirfd, const char *path) {
        int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);

        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

/* Adds the entry <root>/<key>/<uuid>, making <key>'s directory and the
 * anchor if needed, and the root as well if make_root (the guest index; the
 * parent index is built whole instead): -ENOENT if there is no root. Both
 * indexes write their entries through here. */
static int index_link(int dirfd, const char *anchor, const char *path) {
        if (linkat(dirfd, anchor, dirfd, path, 0) == 0 || errno == EEXIST)
                return 0;
        if (errno != ENOENT)
                return index_entry_create(dirfd, path);
        return -ENOENT;
}

static int index_entry_add(int dirfd, const char *root, const char *key, const char *uuid, bool make_root) {
        char path[INDEX_PATH_MAX], dir[INDEX_PATH_MAX], anchor[INDEX_PATH_MAX];
        int r;

        snprintf(anchor, sizeof anchor, "%s/" INDEX_ANCHOR, root);
        snprintf(dir, sizeof dir, "%s/%s", root, key);
        snprintf(path, sizeof path, "%s/%s/%s", root, key, uuid);
        r = index_link(dirfd, anchor, path);
        if (r != -ENOENT)
                return r;

        /* A new key (a guest's or parent's first entry). */
        if (make_root && mkdirat(dirfd, root, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (mkdirat(dirfd, dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        r = index_link(dirfd, anchor, path);
        if (r != -ENOENT)
                return r;

        /* A new index: no anchor yet. */
        r = index_entry_create(dirfd, anchor);
        if (r < 0)
                return r;
        return index_link(dirfd, anchor, path);
}

static int index_add(int dirfd, const char *guest, const char *uuid) {
        char hash[17];
        int r;

        guest_hash(guest, hash);
        r = index_entry_add(dirfd, INDEX_DIR, hash, uuid, true);
        if (r < 0)
                return error_set(r, "cannot write the record index '/" LEDGER_DIR ".by-guest/%s/%s': %s", hash, uuid, strerror(-r));
        return 0;
}

/* Adds an entry under root for every record that parses and for which
 * key() names its key (NULL: none): how an index is built whole, in a
 * directory of its own that the caller renames into place. */
static int index_fill(int dirfd, const char *root, const char *(*key)(const LedgerEntry *e)) {
        _cleanup_strv_free_ char **names = NULL;
        int r;

        r = dir_list_at(dirfd, ".", &names);
        if (r < 0)
                return r;
        for (char **name = names; *name; name++) {
                char text[LEDGER_FILE_MAX];
                const char *k;
                LedgerEntry e;

                if (!ledger_key_is_valid(*name))
                        continue;
                if (ledger_load(dirfd, *name, text) < 0 || ledger_parse(*name, text, &e) < 0)
                        continue; /* not indexed: found only by reading every record */
                k = key(&e);
                if (!k)
                        continue;
                r = index_entry_add(dirfd, root, k, e.uuid, false);
                if (r < 0)
                        return r;
        }
        error_clear();
        return 0;
}

/* Removes a (partial) build directory: its entries, and its key
 * directories with their entries; nothing deeper. */
static void index_build_remove(int dirfd, const char *build) {
        _cleanup_strv_free_ char **names = NULL;

        if (dir_list_at(dirfd, build, &names) < 0)
                return;
        for (char **n = names; *n; n++) {
                _cleanup_strv_free_ char **sub = NULL;
                char path[INDEX_PATH_MAX];

                snprintf(path, sizeof path, "%s/%s", build, *n);
                if (unlinkat(dirfd, path, 0) == 0 || dir_list_at(dirfd, path, &sub) < 0)
                        continue;
                for (char **u = sub; *u; u++) {
                        char entry[INDEX_PATH_MAX];

                        snprintf(entry, sizeof entry, "%s/%s/%s", build, *n, *u);
                        (void) unlinkat(dirfd, entry, 0);
                }
                (void) unlinkat(dirfd, path, AT_REMOVEDIR);
        }
        (void) unlinkat(dirfd, build, AT_REMOVEDIR);
}

/* Builds an index whole: in build, filled under fill_root with key() (see
 * index_fill()), then renamed to dir. Runs under the lock (a writer); a
 * build left by a writer that was killed is removed first. shown: the index
 * as the message says it. */
static int index_build(int dirfd, const char *build, const char *dir, const char *fill_root,
                       const char *(*key)(const LedgerEntry *e), const char *shown) {
        int r;

        index_build_remove(dirfd, build);
        if (mkdirat(dirfd, build, 0700) < 0) {
                r = -errno;
                goto fail;
        }
        r = index_fill(dirfd, fill_root, key);
        if (r < 0)
                goto fail;
        if (renameat(dirfd, build, dirfd, dir) < 0) {
                r = -errno;
                index_build_remove(dirfd, build);
                if (r == -EEXIST || r == -ENOTEMPTY)
                        return 0; /* built meanwhile by someone else */
                return error_set(r, "cannot create the record index '/%s': %s", shown, strerror(-r));
        }
        return 0;
fail:
        error_clear();
        index_build_remove(dirfd, build);
        return error_set(r, "cannot build the record index '/%s': %s", shown, strerror(-r));
}

/* --- the free index -------------------------------------------------------
 *
 * var/lib/mdev-hooks.by-guest/@free/<uuid>: the records that name no guest,
 * chiefly the free mdevs mdev-hooks keeps (release = keep), so that migrate
 * and a full prepare find them without reading every record. '@' keeps the
 * key apart from the guests' hashes. The rules are the guest index's: the
 * entry is added before the record is renamed into place, and entries whose
 * record is gone or now names a guest are pruned by ledger_list_free().
 * Like the parent index it exists whole or not at all, so a missing @free
 * says "not indexed" rather than "none": the first writer of a record
 * without a guest, or the first ledger_list_free(), builds it from every
 * record (in @free.tmp, renamed into place; both hold the host-wide lock).
 * It is never removed when empty. */
#define FINDEX_KEY "@free"
#define FINDEX_DIR INDEX_DIR "/" FINDEX_KEY
#define FINDEX_BUILD_DIR INDEX_DIR "/@free.tmp"

static const char *findex_build_key(const LedgerEntry *e) {
        return e->guest[0] ? NULL : "@free.tmp";
}

static int findex_build(int dirfd) {
        if (mkdirat(dirfd, INDEX_DIR, 0700) < 0 && errno != EEXIST)
                return error_set(-errno, "cannot build the record index '/" LEDGER_DIR ".by-guest/" FINDEX_KEY "': %s",
                                 strerror(errno));
        return index_build(dirfd, FINDEX_BUILD_DIR, FINDEX_DIR, INDEX_DIR, findex_build_key,
                           LEDGER_DIR ".by-guest/" FINDEX_KEY);
}

static int findex_add(int dirfd, const char *uuid) {
        int r;

        if (faccessat(dirfd, FINDEX_DIR, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT)
                        return error_set(-errno, "cannot look at '/" LEDGER_DIR ".by-guest/" FINDEX_KEY "': %s", strerror(errno));
                r = findex_build(dirfd);
                if (r < 0)
                        return r;
        }
        r = index_entry_add(dirfd, INDEX_DIR, FINDEX_KEY, uuid, false);
        if (r < 0)
                return error_set(r, "cannot write the record index '/" LEDGER_DIR ".by-guest/" FINDEX_KEY "/%s': %s", uuid, strerror(-r));
        return 0;
}

/* --- the parent index -----------------------------------------------------
 *
 * var/lib/mdev-hooks.by-parent/<parent>/<uuid>: names, as in the guest
 * index, so that a parent's event reads its own few records and not the
 * thousand of a large host. A parent's name is a valid name (name_is_valid())
 * and so a safe path component: it is used as it is.
 *
 * The rule is the same: the index never lacks a record that names the parent.
 *
 * - ledger_write() adds the entry BEFORE it renames the record into place,
 *   and looks once more after the rename (see below).
 * - A record whose parent changes (a lost mdev made again elsewhere, a record
 *   rewritten by reconcile) leaves an entry under its old parent: a stale
 *   hint. ledger_remove() drops the entry after the record is gone.
 * - ledger_list_parent() verifies every entry by reading the record and
 *   prunes those whose record is gone or names another parent. It runs
 *   without the lock too (the udev helper reads before it waits), so a
 *   writer may rename a record naming the parent between the reader's look
 *   and its unlink. Both sides therefore look again: the reader, after the
 *   unlink, reads the record once more and puts the entry back if it now
 *   names the parent; the writer, after the rename, puts back an entry that
 *   has gone meanwhile. Whichever of the two acts last sees the other's
 *   change, so the entry of a record that names the parent survives.
 * - The index exists either complete or not at all: the first writer that
 *   finds no index builds it from every record in a temporary directory and
 *   renames it into place. Without it, ledger_list_parent() reads every
 *   record (records written by an older version, or by hand).
 * - It is not fsynced, like the guest index: after a power loss it can lack
 *   only records of the earlier boot, and the first udev event of the next
 *   boot reads every record and puts their entries back
 *   (ledger_index_parent_check()).
 * - Parents' directories stay when they empty: removing them would race
 *   with a writer that adds an entry, and there are only as many as the
 *   host has parents. */
#define PINDEX_DIR "../mdev-hooks.by-parent"             /* relative to the record directory */
#define PINDEX_BUILD_DIR "../.mdev-hooks.by-parent.tmp"  /* where a writer builds it */
#define PINDEX_PATH_MAX INDEX_PATH_MAX
_Static_assert(sizeof PINDEX_BUILD_DIR == sizeof "../.mdev-hooks.by-parent.tmp", "INDEX_PATH_MAX");

/* Adds the entry under root (PINDEX_DIR or PINDEX_BUILD_DIR), never the
 * root itself: -ENOENT if there is none. */
static int pindex_entry_add(int dirfd, const char *root, const char *parent, const char *uuid) {
        return index_entry_add(dirfd, root, parent, uuid, false);
}

static bool pindex_entry_exists(int dirfd, const char *parent, const char *uuid) {
        char path[PINDEX_PATH_MAX];

        snprintf(path, sizeof path, PINDEX_DIR "/%s/%s", parent, uuid);
        return faccessat(dirfd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static void pindex_entry_drop(int dirfd, const char *parent, const char *uuid) {
        char path[PINDEX_PATH_MAX];

        snprintf(path, sizeof path, PINDEX_DIR "/%s/%s", parent, uuid);
        (void) unlinkat(dirfd, path, 0);
}

/* Builds the whole index from every record that parses, and renames it into
 * place. Runs under the lock (a writer), once per host. */
static const char *pindex_build_key(const LedgerEntry *e) {
        return e->parent;
}

static int pindex_build(int dirfd) {
        return index_build(dirfd, PINDEX_BUILD_DIR, PINDEX_DIR, PINDEX_BUILD_DIR, pindex_build_key,
                           LEDGER_DIR ".by-parent");
}

/* The entry of a record about to be renamed into place. */
static int pindex_add(int dirfd, const char *parent, const char *uuid) {
        int r;

        r = pindex_entry_add(dirfd, PINDEX_DIR, parent, uuid);
        if (r == -ENOENT && faccessat(dirfd, PINDEX_DIR, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
                r = pindex_build(dirfd);
                if (r < 0)
                        return r;
                r = pindex_entry_add(dirfd, PINDEX_DIR, parent, uuid);
        }
        if (r == -ENOENT && faccessat(dirfd, PINDEX_DIR, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
                return 0; /* removed by hand meanwhile: readers read every record */
        if (r < 0)
                return error_set(r, "cannot write the record index '/" LEDGER_DIR ".by-parent/%s/%s': %s", parent, uuid, strerror(-r));
        return 0;
}

/* --- writing ------------------------------------------------------------ */

int ledger_sync(int dirfd) {
        if (fsync(dirfd) < 0)
                return error_set(-errno, "cannot sync '/" LEDGER_DIR "': %s", strerror(errno));
        return 0;
}

/* fsync() of n files at once: on up to FSYNC_THREADS threads, so that the
 * writes of n small files wait for the disk together rather than one after
 * another (BENCHMARKS.md, "Records written together"). A thread that
 * cannot start leaves its share to
 * this one. The first error, as -errno. */
#define FSYNC_THREADS 4

typedef struct FsyncStride {
        const int *fds;
        size_t n, first, step;
        int r;
} FsyncStride;

static void *fsync_stride(void *userdata) {
        FsyncStride *j = userdata;

        for (size_t i = j->first; i < j->n; i += j->step)
                if (fsync(j->fds[i]) < 0 && j->r == 0)
                        j->r = -errno;
        return NULL;
}

static int fsync_many(const int *fds, size_t n) {
        FsyncStride jobs[FSYNC_THREADS];
        pthread_t threads[FSYNC_THREADS];
        bool started[FSYNC_THREADS] = { false };
        size_t step = n < FSYNC_THREADS ? n : FSYNC_THREADS;
        pthread_attr_t attr;
        bool attr_ok;
        int r = 0;

        attr_ok = pthread_attr_init(&attr) == 0;
        if (attr_ok)
                (void) pthread_attr_setstacksize(&attr, 64 * 1024);
        for (size_t k = 0; k < step; k++) {
                jobs[k] = (FsyncStride) { .fds = fds, .n = n, .first = k, .step = step };
                if (k > 0)
                        started[k] = pthread_create(&threads[k], attr_ok ? &attr : NULL, fsync_stride, &jobs[k]) == 0;
        }
        if (attr_ok)
                pthread_attr_destroy(&attr);
        for (size_t k = 0; k < step; k++) {
                if (k == 0 || !started[k])
                        fsync_stride(&jobs[k]);
                else
                        pthread_join(threads[k], NULL);
                if (r == 0)
                        r = jobs[k].r;
        }
        return r;
}

/* A record being written: its temp file, written but not yet fsynced or
 * renamed into place. */
typedef struct Staged {
        char tmp[UUID_STRING_MAX + 32];
        int fd;
} Staged;

static void staged_abort(int dirfd, Staged *st) {
        if (st->fd >= 0) {
                (void) unlinkat(dirfd, st->tmp, 0);
                close(st->fd);
        }
        st->fd = -1;
}

/* Step 1 of a write: the indexes' entries (hints, added first: see the
 * parent index's comment), and the temp file with the record's text. */
static int record_stage(int dirfd, const LedgerEntry *e, Staged *st) {
        _cleanup_free_ char *text = NULL;
        size_t len, done = 0;
        int r;

        st->fd = -1;
        r = ledger_format(e, &text);
        if (r < 0)
                return r;
        len = strlen(text);

        r = e->guest[0] ? index_add(dirfd, e->guest, e->uuid) : findex_add(dirfd, e->uuid);
        if (r < 0)
                return r;
        r = pindex_add(dirfd, e->parent, e->uuid);
        if (r < 0)
                return r;

        snprintf(st->tmp, sizeof st->tmp, ".%s.%ld.tmp", e->uuid, (long) getpid());
        st->fd = openat(dirfd, st->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (st->fd < 0)
                return error_set(-errno, "cannot create '/" LEDGER_DIR "/%s': %s", st->tmp, strerror(errno));
        while (done < len) {
                ssize_t n = write(st->fd, text + done, len - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : -EIO;
                        staged_abort(dirfd, st);
                        return error_set(r, "cannot write the record '/" LEDGER_DIR "/%s': %s", e->uuid, strerror(-r));
                }
                done += (size_t) n;
        }
        return 0;
}

/* Step 3 (after the fsync of step 2): the record takes its place. */
static int record_commit(int dirfd, const LedgerEntry *e, Staged *st) {
        if (renameat(dirfd, st->tmp, dirfd, e->uuid) < 0) {
                int r = -errno;
                staged_abort(dirfd, st);
                return error_set(r, "cannot write the record '/" LEDGER_DIR "/%s': %s", e->uuid, strerror(-r));
        }
        close(st->fd);
        st->fd = -1;
        /* A reader that found the record missing or naming another parent
         * may have pruned the entry just before the rename (the parent
         * index's comment): put it back. */
        if (!pindex_entry_exists(dirfd, e->parent, e->uuid) && pindex_add(dirfd, e->parent, e->uuid) < 0)
                error_clear(); /* a hint: the record is written */
        return 0;
}

static int ledger_write_full(int dirfd, const LedgerEntry *e, bool sync_dir) {
        Staged st;
        int r;

        r = record_stage(dirfd, e, &st);
        if (r < 0)
                return r;
        if (fsync(st.fd) < 0) {
                r = -errno;
                staged_abort(dirfd, &st);
                return error_set(r, "cannot write the record '/" LEDGER_DIR "/%s': %s", e->uuid, strerror(-r));
        }
        r = record_commit(dirfd, e, &st);
        if (r < 0)
                return r;
        if (sync_dir)
                return ledger_sync(dirfd);
        return 0;
}

int ledger_write_many_nosync(int dirfd, const LedgerEntry *entries, size_t n) {
        _cleanup_free_ Staged *st = NULL;
        _cleanup_free_ int *fds = NULL;
        size_t staged = 0;
        int r = 0;

        if (n == 0)
                return 0;
        if (n == 1)
                return ledger_write_nosync(dirfd, &entries[0]);
        st = calloc(n, sizeof *st);
        fds = calloc(n, sizeof *fds);
        if (!st || !fds)
                return -ENOMEM;
        for (; staged < n; staged++) {
                r = record_stage(dirfd, &entries[staged], &st[staged]);
                if (r < 0)
                        goto fail;
                fds[staged] = st[staged].fd;
        }
        /* Every record's contents on disk before any takes its place, as
         * for one; the n fsyncs overlap (fsync_many()). */
        r = fsync_many(fds, n);
        if (r < 0) {
                r = error_set(r, "cannot write %zu records to '/" LEDGER_DIR "': %s", n, strerror(-r));
                goto fail;
        }
        for (size_t i = 0; i < n; i++) {
                r = record_commit(dirfd, &entries[i], &st[i]);
                if (r < 0) {
                        /* The ones before are in place, like writes one by one
                         * that stopped at this one: the caller's rollback
                         * knows them all. */
                        for (size_t j = i + 1; j < n; j++)
                                staged_abort(dirfd, &st[j]);
                        return r;
                }
        }
        return 0;

fail:
        for (size_t i = 0; i < staged; i++)
                staged_abort(dirfd, &st[i]);
        return r;
}

int ledger_write(int dirfd, const LedgerEntry *e) {
        return ledger_write_full(dirfd, e, true);
}

int ledger_write_nosync(int dirfd, const LedgerEntry *e) {
        return ledger_write_full(dirfd, e, false);
}

/* Drops uuid's entry from a guest's index, and the guest's directory once
 * it is empty. Best effort: a stale entry is only a hint. */
static void index_drop(int dirfd, const char *guest, const char *uuid) {
        char hash[17], path[sizeof INDEX_DIR + 17 + UUID_STRING_MAX + 2];

        if (!guest[0]) {
                snprintf(path, sizeof path, FINDEX_DIR "/%s", uuid);
                (void) unlinkat(dirfd, path, 0);
                return;
        }
        guest_hash(guest, hash);
        snprintf(path, sizeof path, INDEX_DIR "/%s/%s", hash, uuid);
        (void) unlinkat(dirfd, path, 0);
        snprintf(path, sizeof path, INDEX_DIR "/%s", hash);
        (void) unlinkat(dirfd, path, AT_REMOVEDIR); /* ENOTEMPTY: other mdevs */
}

static int ledger_remove_full(int dirfd, const char *uuid, bool sync_dir) {
        char text[LEDGER_FILE_MAX];
        LedgerEntry e = { .guest = "", .parent = "" };

        if (!ledger_key_is_valid(uuid))
                return error_set(-EINVAL, "'%s' is not a UUID", uuid);
        /* Whose it was: to drop the indexes' entries afterwards. */
        if (ledger_load(dirfd, uuid, text) < 0 || ledger_parse(uuid, text, &e) < 0)
                e.guest[0] = e.parent[0] = '\0';
        error_clear();
        if (unlinkat(dirfd, uuid, 0) < 0) {
                if (errno == ENOENT)
                        return 0;
                return error_set(-errno, "cannot remove the record '/" LEDGER_DIR "/%s': %s", uuid, strerror(errno));
        }
        if (sync_dir) {
                int r = ledger_sync(dirfd);
                if (r < 0)
                        return r;
        }
        index_drop(dirfd, e.guest, uuid);
        if (e.parent[0])
                pindex_entry_drop(dirfd, e.parent, uuid);
        return 0;
}

int ledger_remove(int dirfd, const char *uuid) {
        return ledger_remove_full(dirfd, uuid, true);
}

int ledger_remove_nosync(int dirfd, const char *uuid) {
        return ledger_remove_full(dirfd, uuid, false);
}

/* --- listing ------------------------------------------------------------ */

/* Whether the text of a record can name this guest: its "guest = " line
 * starts with the first line of the encoded name. Cheap, and never says no to
 * a record of the guest; the full parse decides. */
static bool text_may_name_guest(const char *text, const char *first_line) {
        const char *p = strstr(text, "\nguest = ");
        size_t n = strlen(first_line);

        if (!p)
                return false;
        p += strlen("\nguest = ");
        return strncmp(p, first_line, n) == 0 && (p[n] == '\n' || p[n] == '\0');
}

/* Lists the records, of one guest or one parent if given. A cheap text check
 * skips most other files before they are parsed; it may let a file through
 * (the parsed record decides), never keep one out. */
static int ledger_list_filtered(int dirfd, const char *guest, const char *parent,
                                LedgerEntry **ret, size_t *ret_n, size_t *ret_bad, char ***ret_unreadable) {
        _cleanup_strv_free_ char **names = NULL, **unreadable = NULL;
        _cleanup_free_ LedgerEntry *list = NULL;
        char first_line[GUEST_CHUNK + 1] = "";
        size_t n = 0, bad = 0;
        int r;

        if (guest) {
                char enc[GUEST_NAME_MAX * 3 + 1];

                if (strnlen(guest, GUEST_NAME_MAX) >= GUEST_NAME_MAX)
                        return error_set(-EINVAL, "guest name too long");
                guest_encode(guest, enc);
                snprintf(first_line, sizeof first_line, "%.*s", (int) guest_first_chunk(enc), enc);
        }
        r = dir_list_at(dirfd, ".", &names);
        if (r < 0)
                return error_set(r, "cannot list '/" LEDGER_DIR "': %s", strerror(-r));
        list = calloc(strv_length(names) + 1, sizeof(LedgerEntry));
        if (!list)
                return -ENOMEM;
        /* dir_list_at sorts, and record files are named by lower-case UUID. */
        for (char **name = names; *name; name++) {
                char text[LEDGER_FILE_MAX];
                LedgerEntry e;
                bool loaded;

                if (!ledger_key_is_valid(*name))
                        continue; /* temporary files, anything else */
                r = ledger_load(dirfd, *name, text);
                if (r == -ENOENT)
                        continue; /* removed meanwhile (a reader without the lock) */
                if (r >= 0 && guest && !text_may_name_guest(text, first_line))
                        continue;
                if (r >= 0 && parent && !strstr(text, parent))
                        continue;
                loaded = r >= 0;
                if (r >= 0)
                        r = ledger_parse(*name, text, &e);
                if (r < 0) {
                        bad++;
                        /* Of the guest's, those whose text may name it. */
                        if (ret_unreadable && (!guest || loaded) && strv_extend(&unreadable, *name) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (guest && !streq(e.guest, guest))
                        continue;
                if (parent && !streq(e.parent, parent))
                        continue;
                list[n++] = e;
        }
        error_clear();
        *ret = steal_pointer(&list);
        *ret_n = n;
        if (ret_bad)
                *ret_bad = bad;
        if (ret_unreadable)
                *ret_unreadable = steal_pointer(&unreadable);
        return 0;
}

int ledger_list(int dirfd, LedgerEntry **ret, size_t *ret_n, size_t *ret_bad) {
        return ledger_list_filtered(dirfd, NULL, NULL, ret, ret_n, ret_bad, NULL);
}

int ledger_list_unreadable(int dirfd, char ***ret) {
        _cleanup_free_ LedgerEntry *l = NULL;
        size_t n;

        return ledger_list_filtered(dirfd, NULL, NULL, &l, &n, NULL, ret);
}

/* Verifies one entry of the parent index: 1 with *ret if its record names
 * the parent, 0 if not (the entry pruned), -EBADMSG if it does not parse,
 * other -errno. */
static int pindex_entry_check(int dirfd, const char *parent, const char *uuid, LedgerEntry *ret) {
        LedgerEntry e;
        int r;

        r = ledger_read(dirfd, uuid, &e);
        if (r >= 0 && streq(e.parent, parent)) {
                *ret = e;
                return 1;
        }
        if (r < 0 && r != -ENOENT)
                return r;
        /* Gone, or another parent's now: stale. A writer may be renaming a
         * record that names the parent right now: look again after the
         * unlink, and put the entry back if so (the index's comment). */
        error_clear();
        pindex_entry_drop(dirfd, parent, uuid);
        if (ledger_read(dirfd, uuid, &e) >= 0 && streq(e.parent, parent)) {
                (void) pindex_entry_add(dirfd, PINDEX_DIR, parent, uuid);
                error_clear();
                *ret = e;
                return 1;
        }
        error_clear();
        return 0;
}

/* The entries of one index's directory for a key (a parent, a guest's hash):
 * 1 with *ret (empty when the key has none), 0 when there is no index at all
 * (records of an older version, or written by hand: the caller reads every
 * record), or -errno with a message. shown: the index as the message says it. */
static int index_list(int dirfd, const char *index, const char *shown, const char *key, char ***ret) {
        char dir[sizeof PINDEX_DIR + NAME_STRING_MAX + 18];
        int r;

        if ((size_t) snprintf(dir, sizeof dir, "%s/%s", index, key) >= sizeof dir)
                return error_set(-ENAMETOOLONG, "'%s' is too long for an index name", key);
        r = dir_list_at(dirfd, dir, ret);
        if (r == -ENOENT) {
                if (faccessat(dirfd, index, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
                        return 0;
                *ret = calloc(1, sizeof(char *));
                return *ret ? 1 : -ENOMEM;
        }
        if (r < 0)
                return error_set(r, "cannot list '/%s/%s': %s", shown, key, strerror(-r));
        return 1;
}

/* Reads the records that the entries names (an index directory's listing,
 * sorted) point to. keep() says of each record: > 0 list it, < 0 its entry
 * is stale (dropped), 0 neither. Entries whose record is gone are dropped;
 * records that do not parse are skipped. */
static int index_read(int dirfd, const char *dir, char * const *names,
                      int (*keep)(const LedgerEntry *e, const void *userdata), const void *userdata,
                      LedgerEntry **ret, size_t *ret_n, char ***ret_unreadable) {
        _cleanup_free_ LedgerEntry *list = NULL;
        _cleanup_strv_free_ char **unreadable = NULL;
        size_t n = 0;

        list = calloc(strv_length(names) + 1, sizeof(LedgerEntry));
        if (!list)
                return -ENOMEM;
        for (char * const *name = names; *name; name++) {
                char entry[INDEX_PATH_MAX];
                LedgerEntry e;
                int r;

                if (!ledger_key_is_valid(*name))
                        continue;
                snprintf(entry, sizeof entry, "%s/%s", dir, *name);
                r = ledger_read(dirfd, *name, &e);
                if (r == -ENOENT || (r >= 0 && (r = keep(&e, userdata)) < 0))
                        (void) unlinkat(dirfd, entry, 0);
                else if (r > 0)
                        list[n++] = e;
                else if (r < 0 && ret_unreadable && strv_extend(&unreadable, *name) < 0)
                        return -ENOMEM;
        }
        error_clear();
        *ret = steal_pointer(&list);
        *ret_n = n;
        if (ret_unreadable)
                *ret_unreadable = steal_pointer(&unreadable);
        return 0;
}

int ledger_list_parent(int dirfd, const char *parent, LedgerEntry **ret, size_t *ret_n, size_t *ret_bad) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ LedgerEntry *list = NULL;
        size_t n = 0, bad = 0;
        int r;

        if (!name_is_valid(parent))
                return error_set(-EINVAL, "'%s' is not a valid parent name", strempty(parent));
        r = index_list(dirfd, PINDEX_DIR, LEDGER_DIR ".by-parent", parent, &names);
        if (r < 0)
                return r;
        if (r == 0)
                return ledger_list_filtered(dirfd, NULL, parent, ret, ret_n, ret_bad, NULL);

        list = calloc(strv_length(names) + 1, sizeof(LedgerEntry));
        if (!list)
                return -ENOMEM;
        /* Sorted by UUID, as dir_list_at sorts. */
        for (char **name = names; *name; name++) {
                if (!ledger_key_is_valid(*name))
                        continue;
                r = pindex_entry_check(dirfd, parent, *name, &list[n]);
                if (r > 0)
                        n++;
                else if (r < 0)
                        bad++;
        }
        error_clear();
        *ret = steal_pointer(&list);
        *ret_n = n;
        if (ret_bad)
                *ret_bad = bad;
        return 0;
}

int ledger_index_parent_check(int dirfd, const LedgerEntry *list, size_t n) {
        /* No index: readers read every record, nothing to put back. Only a
         * writer builds it (under the lock). */
        if (n == 0)
                return 0;
        if (faccessat(dirfd, PINDEX_DIR, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : error_set(-errno, "cannot look at '/" LEDGER_DIR ".by-parent': %s", strerror(errno));
        for (size_t i = 0; i < n; i++) {
                int r;

                if (pindex_entry_exists(dirfd, list[i].parent, list[i].uuid))
                        continue;
                /* A record removed meanwhile leaves a stale entry: pruned by
                 * the next ledger_list_parent(). */
                r = pindex_entry_add(dirfd, PINDEX_DIR, list[i].parent, list[i].uuid);
                if (r < 0 && r != -ENOENT)
                        return error_set(r, "cannot write the record index '/" LEDGER_DIR ".by-parent/%s/%s': %s",
                                         list[i].parent, list[i].uuid, strerror(-r));
        }
        return 0;
}

typedef struct GuestKey {
        const char *guest;
        char hash[17];
} GuestKey;

static int guest_keep(const LedgerEntry *e, const void *userdata) {
        const GuestKey *k = userdata;
        char other[17];

        if (streq(e->guest, k->guest))
                return 1;
        /* Stale, unless another guest's name has the same hash. */
        guest_hash(e->guest, other);
        return streq(other, k->hash) ? 0 : -1;
}

int ledger_list_guest_checked(int dirfd, const char *guest, LedgerEntry **ret, size_t *ret_n,
                              char ***ret_unreadable) {
        _cleanup_strv_free_ char **names = NULL;
        char dir[sizeof INDEX_DIR + 18];
        GuestKey k = { .guest = guest };
        int r;

        if (!guest || !guest[0])
                return ledger_list_filtered(dirfd, guest, NULL, ret, ret_n, NULL, ret_unreadable);
        guest_hash(guest, k.hash);
        snprintf(dir, sizeof dir, INDEX_DIR "/%s", k.hash);
        r = index_list(dirfd, INDEX_DIR, LEDGER_DIR ".by-guest", k.hash, &names);
        if (r < 0)
                return r;
        if (r == 0)
                return ledger_list_filtered(dirfd, guest, NULL, ret, ret_n, NULL, ret_unreadable);

        r = index_read(dirfd, dir, names, guest_keep, &k, ret, ret_n, ret_unreadable);
        if (r >= 0 && *ret_n == 0)
                (void) unlinkat(dirfd, dir, AT_REMOVEDIR); /* fails while other entries remain */
        return r;
}

int ledger_list_guest(int dirfd, const char *guest, LedgerEntry **ret, size_t *ret_n) {
        return ledger_list_guest_checked(dirfd, guest, ret, ret_n, NULL);
}

static int free_keep(const LedgerEntry *e, const void *userdata) {
        return e->guest[0] ? -1 : 1; /* given to a guest: stale */
}

int ledger_list_free(int dirfd, LedgerEntry **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **names = NULL;
        int r;

        r = dir_list_at(dirfd, FINDEX_DIR, &names);
        if (r == -ENOENT) {
                /* Not indexed yet (a host that never kept an mdev, or records
                 * of an older version): build it once, from every record. */
                r = findex_build(dirfd);
                if (r < 0)
                        return r;
                r = dir_list_at(dirfd, FINDEX_DIR, &names);
        }
        if (r < 0)
                return error_set(r, "cannot list '/" LEDGER_DIR ".by-guest/" FINDEX_KEY "': %s", strerror(-r));
        return index_read(dirfd, FINDEX_DIR, names, free_keep, NULL, ret, ret_n, NULL);
}