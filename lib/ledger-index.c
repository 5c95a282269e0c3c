/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The record's three indexes (ledger.h): by guest, of the free records, and
 * by parent, each a directory of names next to the record directory, so that
 * a hook or an event reads only the records it needs. The store (ledger.c)
 * keeps them as it writes (ledger-internal.h); the listings through them are
 * here.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "guestindex.h"
#include "ledger.h"
#include "ledger-internal.h"

/* --- the guest index ------------------------------------------------------
 *
 * var/lib/mdev-hooks.by-guest/<hash of the guest name>/<uuid>: names (hard
 * links to one empty file, see index_entry_add()), a hint that lets release
 * find a guest's records without reading every record on a host with a
 * thousand. The entry goes before its record and is not fsynced (the
 * store's rule: ledger.c, above record_stage()); entries whose record is
 * gone or now names another guest are dropped lazily by
 * ledger_list_guest(), which verifies every entry by reading the record. */
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
 * BENCHMARKS.md, "Decisions, and why"), three per record written. '@' is
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

        /* A new key (a guest's or parent's first entry); the root is made
         * only when it is missing too (once per host). */
        if (mkdirat(dirfd, dir, 0700) < 0 && errno != EEXIST) {
                if (!make_root || errno != ENOENT)
                        return -errno;
                if (mkdirat(dirfd, root, 0700) < 0 && errno != EEXIST)
                        return -errno;
                if (mkdirat(dirfd, dir, 0700) < 0 && errno != EEXIST)
                        return -errno;
        }
        r = index_link(dirfd, anchor, path);
        if (r != -ENOENT)
                return r;

        /* A new index: no anchor yet. */
        r = index_entry_create(dirfd, anchor);
        if (r < 0)
                return r;
        return index_link(dirfd, anchor, path);
}

int ledger_index_guest_add(int dirfd, const char *guest, const char *uuid) {
        char hash[GUEST_INDEX_HASH_MAX];
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
 * key apart from the guests' hashes. The entry goes before its record (the
 * store's rule, as for the guest index), and entries whose record is gone
 * or now names a guest are pruned by ledger_list_free().
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

int ledger_index_free_add(int dirfd, const char *uuid) {
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
 * - The entry goes before its record (the store's rule: ledger.c, above
 *   record_stage()), and the writer looks once more after the rename (see
 *   below).
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
 * - It is not fsynced (the store's rule): the first udev event of the next
 *   boot reads every record and puts back the entries a power loss took
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

bool ledger_index_parent_has(int dirfd, const char *parent, const char *uuid) {
        char path[PINDEX_PATH_MAX];

        snprintf(path, sizeof path, PINDEX_DIR "/%s/%s", parent, uuid);
        return faccessat(dirfd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

void ledger_index_parent_drop(int dirfd, const char *parent, const char *uuid) {
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
int ledger_index_parent_add(int dirfd, const char *parent, const char *uuid) {
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

/* Drops uuid's entry from a guest's index, and the guest's directory once
 * it is empty. Best effort: a stale entry is only a hint. */
void ledger_index_guest_drop(int dirfd, const char *guest, const char *uuid) {
        char hash[GUEST_INDEX_HASH_MAX], path[sizeof INDEX_DIR + GUEST_INDEX_HASH_MAX + UUID_STRING_MAX + 2];

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

/* --- listing through the indexes ---------------------------------------- */

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
        ledger_index_parent_drop(dirfd, parent, uuid);
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

                if (ledger_index_parent_has(dirfd, list[i].parent, list[i].uuid))
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
        char hash[GUEST_INDEX_HASH_MAX];
} GuestKey;

static int guest_keep(const LedgerEntry *e, const void *userdata) {
        const GuestKey *k = userdata;
        char other[GUEST_INDEX_HASH_MAX];

        if (streq(e->guest, k->guest))
                return 1;
        /* Stale, unless another guest's name has the same hash. */
        guest_hash(e->guest, other);
        return streq(other, k->hash) ? 0 : -1;
}

int ledger_list_guest_checked(int dirfd, const char *guest, LedgerEntry **ret, size_t *ret_n,
                              char ***ret_unreadable) {
        _cleanup_strv_free_ char **names = NULL;
        char dir[sizeof INDEX_DIR + GUEST_INDEX_HASH_MAX];
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
