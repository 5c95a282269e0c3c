/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The record's store: one INI file per mdev under var/lib/mdev-hooks/
 * (ledger.h; its text: ledger-record.c).
 *
 * Files are replaced atomically; how, and what a crash or a power loss
 * leaves, is said once, above record_stage().
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

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

int ledger_load(int dirfd, const char *uuid, char buf[LEDGER_FILE_MAX]) {
        _cleanup_close_ int fd = -1;
        size_t len;
        int r;

        fd = openat(dirfd, uuid, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0) {
                if (errno == ENOENT)
                        return -ENOENT;
                return error_set(-errno, "cannot open '/" LEDGER_DIR "/%s': %s", uuid, strerror(errno));
        }
        /* At most LEDGER_FILE_MAX - 2 bytes, as ever. */
        r = read_fd_small(fd, buf, LEDGER_FILE_MAX - 1, &len);
        if (r == -EFBIG)
                return error_set(-EBADMSG, "'/" LEDGER_DIR "/%s' is too large to be a record", uuid);
        if (r < 0)
                return error_set(r, "cannot read '/" LEDGER_DIR "/%s': %s", uuid, strerror(-r));
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

/* --- writing ------------------------------------------------------------ */

int ledger_sync(int dirfd) {
        if (fsync(dirfd) < 0)
                return error_set(-errno, "cannot sync '/" LEDGER_DIR "': %s", strerror(errno));
        return 0;
}

/* A record's text made durable: fdatasync(), which waits for the text and
 * for what reading it back needs (its size, its blocks), not for its times,
 * which nothing reads. A record written over the spare at the spare's
 * length (a guest's records, prepared and released in turn, are) then
 * costs the disk its one data block, not the inode as well, and on a
 * journalled file system no journal commit. Directories keep fsync(). */
static int record_data_sync(int fd) {
        return fdatasync(fd) < 0 ? -errno : 0;
}

/* record_data_sync() of n files at once: on up to FSYNC_THREADS threads,
 * so that the writes of n small files wait for the disk together rather
 * than one after another (BENCHMARKS.md, "Records written together"). A
 * thread that cannot start leaves its share to this one. The first error,
 * as -errno. */
#define FSYNC_THREADS 4

typedef struct FsyncStride {
        const int *fds;
        size_t n, first, step;
        int r;
} FsyncStride;

static void *fsync_stride(void *userdata) {
        FsyncStride *j = userdata;

        for (size_t i = j->first; i < j->n; i += j->step) {
                int r = record_data_sync(j->fds[i]);

                if (r < 0 && j->r == 0)
                        j->r = r;
        }
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

/* How a record is written, and what a crash leaves (said here only; the
 * indexes and ledger.h point here, doc/design.md §4.4 is the hooks' side):
 *
 * 1. record_stage(): the record's index entries (ledger-index.c), then its
 *    text in a temporary file ".<uuid>.<pid>.tmp" in the record directory
 *    (the spare a removed record left, renamed to that name, when there is
 *    one: record_tmp_open()).
 * 2. fdatasync of the temporary file (record_data_sync(); fsync_many() for
 *    a batch).
 * 3. record_commit(): renameat over the record; then the parent index's
 *    entry is looked at once more (a reader may have pruned it meanwhile).
 * 4. fsync of the directory: at once (ledger_write()), or once at the end
 *    of a batch under one lock (ledger_sync()).
 *
 * So a reader, with the lock or without, sees the old record or the new
 * one, never a torn one, and no record takes its place before its text is
 * on disk. A kill leaves at most a temporary file, which listings skip,
 * and index entries ahead of their record, which listings verify and prune:
 * an index never lacks a record that was written, because the entry goes
 * first. The indexes are not fsynced: after a power loss they can lack only
 * records of an earlier boot, whose mdevs are gone (the udev helper and
 * reconcile deal with those; ledger_index_parent_check() puts the parent
 * index's entries back). A remove goes the other way: the record, then its
 * entries.
 *
 * A record being written: its temp file, written but not yet fsynced or
 * renamed into place. */
typedef struct Staged {
        char tmp[UUID_STRING_MAX + 32];
        int fd;
        bool spare;             /* the file is the spare: cut it to the new text */
} Staged;

static void staged_abort(int dirfd, Staged *st) {
        if (st->fd >= 0) {
                (void) unlinkat(dirfd, st->tmp, 0);
                close(st->fd);
        }
        st->fd = -1;
}

/* A file that a removed record leaves, for the next record written to take
 * (record_remove(), record_tmp_open()): a new file costs an inode, which
 * ext4 without a journal is slow to find where many were deleted lately (it
 * skips them: a quarter of a prepare's CPU time in bench/run's loop), and a
 * removed record frees one. Its name is no record's (ledger_key_is_valid()),
 * so listings skip it, as they skip a temp file; what it holds is never
 * read. */
#define LEDGER_SPARE ".spare"

/* The temp file, opened for writing: the spare, when there is one, taken
 * by renaming it to the temp's name (one writer gets it: the name is gone
 * for the next), else a new file. The spare is written over in place, not
 * truncated first (*ret_spare: cut it to the new length after): a block
 * freed and taken again costs what the inode would have. */
static int record_tmp_open(int dirfd, const char *tmp, bool *ret_spare) {
        int fd;

        *ret_spare = false;
        if (renameat2(dirfd, LEDGER_SPARE, dirfd, tmp, RENAME_NOREPLACE) == 0) {
                fd = openat(dirfd, tmp, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
                if (fd >= 0) {
                        *ret_spare = true;
                        return fd;
                }
        }
        return openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
}

/* Removes the record named uuid: renamed to the spare when there is none
 * (its name is gone at once, as with unlink), else unlinked. -errno. */
static int record_remove(int dirfd, const char *uuid) {
        if (renameat2(dirfd, uuid, dirfd, LEDGER_SPARE, RENAME_NOREPLACE) == 0)
                return 0;
        if (errno == ENOENT)
                return -ENOENT;
        return unlinkat(dirfd, uuid, 0) < 0 ? -errno : 0;
}

/* Step 1 of a write (above): the indexes' entries, and the temp file with
 * the record's text. */
static int record_stage(int dirfd, const LedgerEntry *e, Staged *st) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        st->fd = -1;
        r = ledger_format(e, &text);
        if (r < 0)
                return r;
        len = strlen(text);

        r = e->guest[0] ? ledger_index_guest_add(dirfd, e->guest, e->uuid) : ledger_index_free_add(dirfd, e->uuid);
        if (r < 0)
                return r;
        r = ledger_index_parent_add(dirfd, e->parent, e->uuid);
        if (r < 0)
                return r;

        snprintf(st->tmp, sizeof st->tmp, ".%s.%ld.tmp", e->uuid, (long) getpid());
        st->fd = record_tmp_open(dirfd, st->tmp, &st->spare);
        if (st->fd < 0)
                return error_set(-errno, "cannot create '/" LEDGER_DIR "/%s': %s", st->tmp, strerror(errno));
        r = write_full(st->fd, text, len);
        if (r < 0) {
                staged_abort(dirfd, st);
                return error_set(r, "cannot write the record '/" LEDGER_DIR "/%s': %s", e->uuid, strerror(-r));
        }
        /* the spare's old text may be longer: cut in place, no block freed */
        if (st->spare && ftruncate(st->fd, (off_t) len) < 0) {
                r = -errno;
                staged_abort(dirfd, st);
                return error_set(r, "cannot write the record '/" LEDGER_DIR "/%s': %s", e->uuid, strerror(-r));
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
         * index's comment, ledger-index.c): put it back. */
        if (!ledger_index_parent_has(dirfd, e->parent, e->uuid) && ledger_index_parent_add(dirfd, e->parent, e->uuid) < 0)
                error_clear(); /* a hint: the record is written */
        return 0;
}

static int ledger_write_full(int dirfd, const LedgerEntry *e, bool sync_dir) {
        Staged st;
        int r;

        r = record_stage(dirfd, e, &st);
        if (r < 0)
                return r;
        r = record_data_sync(st.fd);
        if (r < 0) {
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

static int ledger_remove_full(int dirfd, const char *uuid, bool sync_dir) {
        char text[LEDGER_FILE_MAX];
        LedgerEntry e = { .guest = "", .parent = "" };
        int r;

        if (!ledger_key_is_valid(uuid))
                return error_set(-EINVAL, "'%s' is not a UUID", uuid);
        /* Whose it was: to drop the indexes' entries afterwards. */
        if (ledger_load(dirfd, uuid, text) < 0 || ledger_parse(uuid, text, &e) < 0)
                e.guest[0] = e.parent[0] = '\0';
        error_clear();
        r = record_remove(dirfd, uuid);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return error_set(r, "cannot remove the record '/" LEDGER_DIR "/%s': %s", uuid, strerror(-r));
        if (sync_dir) {
                r = ledger_sync(dirfd);
                if (r < 0)
                        return r;
        }
        ledger_index_guest_drop(dirfd, e.guest, uuid);
        if (e.parent[0])
                ledger_index_parent_drop(dirfd, e.parent, uuid);
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
int ledger_list_filtered(int dirfd, const char *guest, const char *parent,
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
                ledger_guest_encode(guest, enc);
                snprintf(first_line, sizeof first_line, "%.*s", (int) ledger_guest_first_chunk(enc), enc);
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
