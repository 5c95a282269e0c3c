/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The record (ledger.c): round trip, atomic replace, files that do not parse. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "check.h"
#include "fixture.h"
#include "ledger.h"

#define U1 "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b9d"
#define U2 "5d0c4e8a-8d3a-4b38-9f7e-2f0f4c1d9a10"
#define BOOT "1a2b3c4d-0000-4000-8000-000000000001"

static char tmpdir[] = "/tmp/test-ledger-XXXXXX";

static void entry_init(LedgerEntry *e, const char *uuid, const char *guest) {
        memset(e, 0, sizeof *e);
        snprintf(e->uuid, sizeof e->uuid, "%s", uuid);
        snprintf(e->parent, sizeof e->parent, "0000:84:00.0");
        snprintf(e->type, sizeof e->type, "nvidia-35");
        e->state = LEDGER_ASSIGNED;
        e->origin = LEDGER_CREATED;
        snprintf(e->guest, sizeof e->guest, "%s", guest);
        snprintf(e->boot_id, sizeof e->boot_id, BOOT);
        e->since = 1732245600;
}

static void write_file(int dirfd, const char *name, const char *text) {
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        check(fd >= 0);
        check(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
}

static void test_strings(void) {
        for (int s = 0; s < _LEDGER_STATE_MAX; s++)
                check(ledger_state_from_string(ledger_state_to_string((LedgerState) s)) == (LedgerState) s);
        for (int o = 0; o < _LEDGER_ORIGIN_MAX; o++)
                check(ledger_origin_from_string(ledger_origin_to_string((LedgerOrigin) o)) == (LedgerOrigin) o);
        check(ledger_state_from_string("bogus") == _LEDGER_STATE_INVALID);
        check(ledger_origin_from_string(NULL) == _LEDGER_ORIGIN_INVALID);
}

static void test_round_trip(int dirfd) {
        LedgerEntry e, r;

        entry_init(&e, U1, "web1");
        snprintf(e.guest_uuid, sizeof e.guest_uuid, "8d5e0000-1111-4222-8333-444455556666");
        e.remove_pending = true;
        check(ledger_write(dirfd, &e) == 0);
        check(ledger_read(dirfd, U1, &r) == 0);
        check(memcmp(&e, &r, sizeof e) == 0);
        check(ledger_remove(dirfd, U1) == 0);
        check(ledger_read(dirfd, U1, &r) == -ENOENT);
        check(ledger_remove(dirfd, U1) == 0); /* idempotent */
}

static void test_round_trip_hostile_guest_name(int dirfd) {
        LedgerEntry e, r;
        char name[GUEST_NAME_MAX];

        /* inih comment and delimiter characters, spaces at both ends, 255 bytes. */
        memset(name, 0, sizeof name);
        for (size_t i = 0; i < sizeof name - 1; i++)
                name[i] = " ;#=:[]%\t\\\"'x"[i % 13];
        entry_init(&e, U1, name);
        check(ledger_write(dirfd, &e) == 0);
        check(ledger_read(dirfd, U1, &r) == 0);
        check(streq(r.guest, name));
        check(memcmp(&e, &r, sizeof e) == 0);

        entry_init(&e, U1, "");
        e.state = LEDGER_FREE;
        check(ledger_write(dirfd, &e) == 0);
        check(ledger_read(dirfd, U1, &r) == 0);
        check(r.guest[0] == '\0' && r.state == LEDGER_FREE);
        check(ledger_remove(dirfd, U1) == 0);
}

static void test_atomic_replace(int dirfd) {
        _cleanup_strv_free_ char **names = NULL;
        LedgerEntry e, r;
        struct stat st;

        entry_init(&e, U1, "web1");
        check(ledger_write(dirfd, &e) == 0);
        check(fstatat(dirfd, U1, &st, 0) == 0);
        check((st.st_mode & 0777) == 0600);

        entry_init(&e, U1, "web2");
        e.state = LEDGER_INCOMING;
        check(ledger_write(dirfd, &e) == 0);
        check(ledger_read(dirfd, U1, &r) == 0);
        check(streq(r.guest, "web2") && r.state == LEDGER_INCOMING);

        /* No temporary file is left behind, and the old inode was replaced. */
        check(dir_list_at(dirfd, ".", &names) == 0);
        check(strv_length(names) == 1 && streq(names[0], U1));
        check(ledger_remove(dirfd, U1) == 0);
}

/* A removed record's file is kept as the spare, which the next record
 * written takes (no new inode), written over in place with none of the
 * longer old text left; listings never show it; one spare at most. */
static void test_spare(int dirfd) {
        _cleanup_free_ char *text = NULL, *want = NULL;
        _cleanup_free_ LedgerEntry *l = NULL;
        LedgerEntry e, r;
        struct stat st, sp;
        size_t n, bad;
        int fd;

        (void) unlinkat(dirfd, ".spare", 0);
        entry_init(&e, U1, "a-guest-whose-name-is-much-longer-than-the-next-one");
        check(ledger_write(dirfd, &e) == 0);
        check(fstatat(dirfd, U1, &st, 0) == 0);
        check(ledger_remove(dirfd, U1) == 0);
        check(fstatat(dirfd, ".spare", &sp, 0) == 0 && sp.st_ino == st.st_ino);
        check(ledger_list(dirfd, &l, &n, &bad) == 0 && n == 0 && bad == 0);

        entry_init(&e, U2, "web2");
        check(ledger_write(dirfd, &e) == 0);
        check(fstatat(dirfd, ".spare", &sp, 0) < 0 && errno == ENOENT);
        check(fstatat(dirfd, U2, &sp, 0) == 0 && sp.st_ino == st.st_ino);
        check(ledger_read(dirfd, U2, &r) == 0 && memcmp(&e, &r, sizeof e) == 0);
        check(ledger_format(&e, &want) == 0);
        text = calloc(1, 4097);
        check(text);
        fd = openat(dirfd, U2, O_RDONLY | O_CLOEXEC);
        check(fd >= 0);
        check(read(fd, text, 4096) == (ssize_t) strlen(want));
        close(fd);
        check(streq(text, want));

        /* two removed: one is the spare, the other is gone */
        entry_init(&e, U1, "web1");
        check(ledger_write(dirfd, &e) == 0);
        check(ledger_remove(dirfd, U1) == 0);
        check(ledger_remove(dirfd, U2) == 0);
        check(fstatat(dirfd, ".spare", &sp, 0) == 0);
        check(fstatat(dirfd, U1, &sp, 0) < 0 && fstatat(dirfd, U2, &sp, 0) < 0);
}

static void test_invalid_entries_are_not_written(int dirfd) {
        LedgerEntry e, r;

        entry_init(&e, U1, "web1");
        snprintf(e.parent, sizeof e.parent, "../etc");
        check(ledger_write(dirfd, &e) == -EINVAL);
        entry_init(&e, U1, "web1");
        snprintf(e.boot_id, sizeof e.boot_id, "nope");
        check(ledger_write(dirfd, &e) == -EINVAL);
        check(ledger_read(dirfd, U1, &r) == -ENOENT);
        check(ledger_read(dirfd, "../x", &r) == -EINVAL);
}

static void test_bad_files(int dirfd) {
        static const struct {
                const char *text;
                const char *reason;
        } cases[] = {
                { "garbage without section\n", "line 1" },
                { "[mdev]\nuuid = " U1 "\nparent = p\ntype = t\nstate = sleeping\norigin = created\nboot_id = " BOOT "\n", "unknown state" },
                { "[mdev]\nuuid = " U1 "\nparent = p\ntype = t\nstate = free\norigin = stolen\nboot_id = " BOOT "\n", "unknown origin" },
                { "[mdev]\nuuid = " U1 "\nparent = ../p\ntype = t\nstate = free\norigin = created\nboot_id = " BOOT "\n", "line 3: parent" },
                { "[mdev]\nuuid = " U1 "\nparent = p\ntype = t\nstate = free\norigin = created\nboot_id = " BOOT "\ncolour = red\n", "unknown key 'colour'" },
                { "[mdev]\nuuid = " U1 "\nparent = p\ntype = t\nstate = free\norigin = created\n", "missing key" },
                { "[mdev]\nuuid = " U2 "\nparent = p\ntype = t\nstate = free\norigin = created\nboot_id = " BOOT "\n", "does not match" },
                { "[mdev]\nuuid = " U1 "\nparent = p\ntype = t\nstate = assigned\norigin = created\nboot_id = " BOOT "\n", "needs a guest" },
                { "[mdev]\nuuid = " U1 "\nparent = p\ntype = t\nstate = free\norigin = created\nboot_id = " BOOT "\nsince = -1\n", "since" },
                { "[mdev]\nuuid = " U1 "\nuuid = " U1 "\n", "duplicate" },
                { "[other]\nuuid = " U1 "\n", "unknown section" },
                { "[mdev]\nuuid = " U1 "\nparent = p\ntype = t\nstate = free\norigin = created\nboot_id = 1a2b\n", "line 7: boot_id is not a UUID" },
                { "[mdev]\nuuid = " U1 "\nparent = p\ntype = t\nstate = free\norigin = created\nguest_uuid = x\nboot_id = " BOOT "\n", "line 7: guest_uuid is not a UUID" },
                { "[mdev]\nuuid = " U1 "\nparent = p\ntype = t\nstate = assigned\norigin = created\nguest = a%zz\nboot_id = " BOOT "\n", "guest" },
        };
        LedgerEntry r;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                error_clear();
                write_file(dirfd, U1, cases[i].text);
                check(ledger_read(dirfd, U1, &r) == -EBADMSG);
                if (!strstr(error_get(-EBADMSG), cases[i].reason) || !strstr(error_get(-EBADMSG), U1)) {
                        fprintf(stderr, "case %zu: message '%s' lacks '%s'\n", i, error_get(-EBADMSG), cases[i].reason);
                        abort();
                }
        }
        check(ledger_remove(dirfd, U1) == 0);
}

/* The size limit of a record file: LEDGER_FILE_MAX - 2 = 4094 bytes are
 * read (and parse: blank lines), one more is "too large"; a NUL byte is
 * refused whatever the size. */
static void test_file_size_limit(int dirfd) {
        char text[4096];
        LedgerEntry e, r;
        size_t len;
        int fd;

        entry_init(&e, U1, "vm1");
        check(ledger_write(dirfd, &e) == 0);
        fd = openat(dirfd, U1, O_RDONLY | O_CLOEXEC);
        check(fd >= 0);
        len = (size_t) read(fd, text, sizeof text - 1);
        close(fd);
        check(len > 0 && len < 4094);
        memset(text + len, '\n', 4094 - len);
        text[4094] = '\0';
        write_file(dirfd, U1, text);
        check(ledger_read(dirfd, U1, &r) == 0);
        check(memcmp(&e, &r, sizeof e) == 0);

        text[4094] = '\n';
        text[4095] = '\0';
        write_file(dirfd, U1, text);
        error_clear();
        check(ledger_read(dirfd, U1, &r) == -EBADMSG);
        check(strstr(error_get(-EBADMSG), "too large to be a record"));

        fd = openat(dirfd, U1, O_WRONLY | O_TRUNC | O_CLOEXEC);
        check(fd >= 0);
        check(write(fd, "[mdev]\n\0\n", 9) == 9);
        close(fd);
        error_clear();
        check(ledger_read(dirfd, U1, &r) == -EBADMSG);
        check(strstr(error_get(-EBADMSG), "holds a NUL byte"));
        check(ledger_remove(dirfd, U1) == 0);
}

/* A record made free: no guest, the new time; its mdev's facts stay. */
static void test_entry_set_free(int dirfd) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        LedgerEntry e, r;

        entry_init(&e, U1, "vm1");
        snprintf(e.guest_uuid, sizeof e.guest_uuid, U2);
        e.origin = LEDGER_BORROWED;
        e.remove_pending = true;
        ledger_entry_set_free(&e, 1732249999);
        check(e.state == LEDGER_FREE && e.guest[0] == '\0' && e.guest_uuid[0] == '\0');
        check(e.since == 1732249999);
        check(e.origin == LEDGER_BORROWED && e.remove_pending);
        check(streq(e.uuid, U1) && streq(e.parent, "0000:84:00.0") && streq(e.type, "nvidia-35"));
        check(streq(e.boot_id, BOOT));
        check(ledger_write(dirfd, &e) == 0);
        check(ledger_read(dirfd, U1, &r) == 0);
        check(ledger_format(&e, &a) == 0 && ledger_format(&r, &b) == 0);
        check_streq(a, b);
        check(ledger_remove(dirfd, U1) == 0);
}

static void test_list(int dirfd) {
        _cleanup_free_ LedgerEntry *l = NULL;
        LedgerEntry e;
        size_t n, bad;

        entry_init(&e, U2, "web2");
        check(ledger_write(dirfd, &e) == 0);
        entry_init(&e, U1, "web1");
        check(ledger_write(dirfd, &e) == 0);
        write_file(dirfd, "." U1 ".123.tmp", "half a file");
        write_file(dirfd, "00000000-0000-4000-8000-000000000000", "[mdev]\nbroken\n");

        check(ledger_list(dirfd, &l, &n, &bad) == 0);
        check(n == 2 && bad == 1);
        check(streq(l[0].uuid, U2) && streq(l[1].uuid, U1)); /* sorted by UUID */
        free(steal_pointer(&l));

        check(ledger_list_guest(dirfd, "web1", &l, &n) == 0);
        check(n == 1 && streq(l[0].uuid, U1));
        free(steal_pointer(&l));
        check(ledger_list_guest(dirfd, "nobody", &l, &n) == 0);
        check(n == 0);
        free(steal_pointer(&l));
}

static void test_list_guest_exact(int dirfd) {
        _cleanup_free_ LedgerEntry *l = NULL;
        char long1[GUEST_NAME_MAX], long2[GUEST_NAME_MAX];
        LedgerEntry e;
        size_t n;

        /* A name that is a prefix of another, and two long names that differ
         * only after the first record line. */
        memset(long1, 'a', 200);
        long1[200] = '\0';
        memcpy(long2, long1, sizeof long1);
        long2[199] = 'b';

        entry_init(&e, "00000000-0000-4000-8000-000000000011", "web10");
        check(ledger_write(dirfd, &e) == 0);
        entry_init(&e, "00000000-0000-4000-8000-000000000012", long1);
        check(ledger_write(dirfd, &e) == 0);
        entry_init(&e, "00000000-0000-4000-8000-000000000013", long2);
        check(ledger_write(dirfd, &e) == 0);

        check(ledger_list_guest(dirfd, "web1", &l, &n) == 0);
        check(n == 1 && streq(l[0].uuid, U1));
        free(steal_pointer(&l));
        check(ledger_list_guest(dirfd, "web10", &l, &n) == 0);
        check(n == 1 && streq(l[0].guest, "web10"));
        free(steal_pointer(&l));
        check(ledger_list_guest(dirfd, long2, &l, &n) == 0);
        check(n == 1 && streq(l[0].uuid, "00000000-0000-4000-8000-000000000013"));
        free(steal_pointer(&l));
        check(ledger_list_guest(dirfd, long1, &l, &n) == 0);
        check(n == 1 && streq(l[0].uuid, "00000000-0000-4000-8000-000000000012"));
}

static void test_guest_index(int rootfd) {
        _cleanup_free_ LedgerEntry *l = NULL;
        int dirfd;
        LedgerEntry e;
        size_t n;

        check(mkdir_p_at(rootfd, "idx/var/lib", 0700) == 0);
        {
                _cleanup_close_ int sub = openat(rootfd, "idx", O_PATH | O_DIRECTORY | O_CLOEXEC);
                check(sub >= 0);
                check(ledger_open(sub, &dirfd) == 0);
        }

        /* No index yet: a record written by hand is still found. */
        write_file(dirfd, U1, "[mdev]\nuuid = " U1 "\nparent = p\ntype = t\nstate = assigned\norigin = created\nguest = web1\nboot_id = " BOOT "\n");
        check(ledger_list_guest(dirfd, "web1", &l, &n) == 0);
        check(n == 1);
        free(steal_pointer(&l));

        /* Written through ledger.c: found through the index. */
        entry_init(&e, U2, "web2");
        check(ledger_write(dirfd, &e) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-guest", F_OK, 0) == 0);
        check(ledger_list_guest(dirfd, "web2", &l, &n) == 0);
        check(n == 1 && streq(l[0].uuid, U2));
        free(steal_pointer(&l));

        /* Given to another guest: web2 no longer lists it, web3 does. */
        entry_init(&e, U2, "web3");
        check(ledger_write(dirfd, &e) == 0);
        check(ledger_list_guest(dirfd, "web2", &l, &n) == 0);
        check(n == 0);
        free(steal_pointer(&l));
        check(ledger_list_guest(dirfd, "web3", &l, &n) == 0);
        check(n == 1 && streq(l[0].uuid, U2));
        free(steal_pointer(&l));

        /* Removed: not listed, and the stale entry goes. */
        check(ledger_remove(dirfd, U2) == 0);
        check(ledger_list_guest(dirfd, "web3", &l, &n) == 0);
        check(n == 0);
        close(dirfd);
}

static void write_by_hand(int dirfd, const char *uuid, const char *parent) {
        char text[512];

        snprintf(text, sizeof text, "[mdev]\nuuid = %s\nparent = %s\ntype = t\nstate = free\norigin = created\nboot_id = " BOOT "\n",
                 uuid, parent);
        write_file(dirfd, uuid, text);
}

static int open_fresh_ledger(int rootfd, const char *name) {
        _cleanup_close_ int sub = -1;
        char path[64];
        int dirfd;

        snprintf(path, sizeof path, "%s/var/lib", name);
        check(mkdir_p_at(rootfd, path, 0700) == 0);
        sub = openat(rootfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(sub >= 0);
        check(ledger_open(sub, &dirfd) == 0);
        return dirfd;
}

#define P1 "0000:84:00.0"
#define P2 "0000:85:00.0"
#define U3 "00000000-0000-4000-8000-000000000021"
#define U4 "00000000-0000-4000-8000-000000000022"
#define U5 "00000000-0000-4000-8000-000000000023"

static void list_parent_check(int dirfd, const char *parent, size_t want_n, const char *first, size_t want_bad) {
        _cleanup_free_ LedgerEntry *l = NULL;
        size_t n = 99, bad = 99;

        check(ledger_list_parent(dirfd, parent, &l, &n, &bad) == 0);
        check(n == want_n);
        check(bad == want_bad);
        for (size_t i = 0; i < n; i++)
                check(streq(l[i].parent, parent));
        for (size_t i = 1; i < n; i++)
                check(strcmp(l[i - 1].uuid, l[i].uuid) < 0);
        if (first)
                check(n > 0 && streq(l[0].uuid, first));
}

static void test_parent_index_lists_by_parent(int rootfd) {
        int dirfd = open_fresh_ledger(rootfd, "pidx1");
        LedgerEntry e;

        /* Written by hand before any index exists: the first write builds
         * the index from every record, so these are found through it too. */
        write_by_hand(dirfd, U3, P1);
        write_by_hand(dirfd, U4, P2);
        check(faccessat(dirfd, "../mdev-hooks.by-parent", F_OK, 0) < 0 && errno == ENOENT);
        entry_init(&e, U5, "web1");
        check(ledger_write(dirfd, &e) == 0); /* on P1 */
        entry_init(&e, U1, "");
        e.state = LEDGER_FREE;
        snprintf(e.parent, sizeof e.parent, P2);
        check(ledger_write(dirfd, &e) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/" P1 "/" U3, F_OK, 0) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/" P1 "/" U5, F_OK, 0) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/" P2 "/" U4, F_OK, 0) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/" P2 "/" U1, F_OK, 0) == 0);
        check(faccessat(dirfd, "../.mdev-hooks.by-parent.tmp", F_OK, 0) < 0 && errno == ENOENT);

        list_parent_check(dirfd, P1, 2, U3, 0);
        list_parent_check(dirfd, P2, 2, U4, 0);
        list_parent_check(dirfd, "0000:86:00.0", 0, NULL, 0);

        /* Only what the index names is read: a record put in by hand after
         * the index exists is not found by parent (the udev helper's first
         * sweep of a boot puts such entries back), but by ledger_list(). */
        write_by_hand(dirfd, "00000000-0000-4000-8000-000000000024", P1);
        list_parent_check(dirfd, P1, 2, U3, 0);
        {
                _cleanup_free_ LedgerEntry *l = NULL;
                size_t n;

                check(ledger_list(dirfd, &l, &n, NULL) == 0);
                check(n == 5);
                check(ledger_index_parent_check(dirfd, l, n) == 0);
        }
        list_parent_check(dirfd, P1, 3, U3, 0);

        /* An indexed record that no longer parses is counted, not listed. */
        write_file(dirfd, U3, "[mdev]\nuuid = nonsense\n");
        list_parent_check(dirfd, P1, 2, U5, 1);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/" P1 "/" U3, F_OK, 0) == 0);
        close(dirfd);
}

static void test_parent_index_prunes_stale_entries(int rootfd) {
        int dirfd = open_fresh_ledger(rootfd, "pidx2");
        LedgerEntry e;

        entry_init(&e, U1, "web1");
        check(ledger_write(dirfd, &e) == 0);
        entry_init(&e, U2, "web2");
        check(ledger_write(dirfd, &e) == 0);
        entry_init(&e, U3, "web3");
        check(ledger_write(dirfd, &e) == 0);
        list_parent_check(dirfd, P1, 3, NULL, 0);

        /* Made again on another parent: the old parent's entry is stale. */
        entry_init(&e, U1, "web1");
        snprintf(e.parent, sizeof e.parent, P2);
        check(ledger_write(dirfd, &e) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/" P1 "/" U1, F_OK, 0) == 0);
        list_parent_check(dirfd, P1, 2, U3, 0);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/" P1 "/" U1, F_OK, 0) < 0 && errno == ENOENT);
        list_parent_check(dirfd, P2, 1, U1, 0);

        /* Removed through ledger.c: its entry goes with it. */
        check(ledger_remove(dirfd, U2) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/" P1 "/" U2, F_OK, 0) < 0 && errno == ENOENT);
        /* Removed by hand (or a hook killed between unlink and entry drop). */
        check(unlinkat(dirfd, U3, 0) == 0);
        list_parent_check(dirfd, P1, 0, NULL, 0);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/" P1 "/" U3, F_OK, 0) < 0 && errno == ENOENT);
        /* A stale entry whose record names the parent again is kept. */
        entry_init(&e, U1, "web1");
        check(ledger_write(dirfd, &e) == 0);
        list_parent_check(dirfd, P1, 1, U1, 0);
        close(dirfd);
}

static void test_parent_index_missing_falls_back(int rootfd) {
        int dirfd = open_fresh_ledger(rootfd, "pidx3");
        LedgerEntry e;

        entry_init(&e, U1, "web1");
        check(ledger_write(dirfd, &e) == 0);
        entry_init(&e, U2, "");
        e.state = LEDGER_FREE;
        snprintf(e.parent, sizeof e.parent, P2);
        check(ledger_write(dirfd, &e) == 0);
        write_by_hand(dirfd, U3, P1);
        /* No index at all: every record is read. */
        check(system("rm -r \"$TEST_LEDGER_ROOT/pidx3/var/lib/mdev-hooks.by-parent\"") == 0);
        list_parent_check(dirfd, P1, 2, U3, 0);
        list_parent_check(dirfd, P2, 1, U2, 0);
        /* A left-over build of a writer that was killed is thrown away by
         * the next build, and the next write makes the index whole again. */
        check(mkdirat(dirfd, "../.mdev-hooks.by-parent.tmp", 0700) == 0);
        check(mkdirat(dirfd, "../.mdev-hooks.by-parent.tmp/junk", 0700) == 0);
        write_file(dirfd, "../.mdev-hooks.by-parent.tmp/junk/" U4, "");
        entry_init(&e, U5, "web5");
        check(ledger_write(dirfd, &e) == 0);
        check(faccessat(dirfd, "../.mdev-hooks.by-parent.tmp", F_OK, 0) < 0 && errno == ENOENT);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/junk", F_OK, 0) < 0 && errno == ENOENT);
        list_parent_check(dirfd, P1, 3, U3, 0);
        list_parent_check(dirfd, P2, 1, U2, 0);
        close(dirfd);
}

static void test_batch_without_directory_sync(int rootfd) {
        int dirfd = open_fresh_ledger(rootfd, "batch");
        LedgerEntry e, r;

        /* Each change is visible at once, with its index entries; the
         * directory is fsynced once at the end. */
        entry_init(&e, U1, "web1");
        check(ledger_write_nosync(dirfd, &e) == 0);
        entry_init(&e, U2, "web2");
        check(ledger_write_nosync(dirfd, &e) == 0);
        check(ledger_read(dirfd, U1, &r) == 0 && streq(r.guest, "web1"));
        list_parent_check(dirfd, P1, 2, U2, 0);
        check(ledger_remove_nosync(dirfd, U1) == 0);
        check(ledger_read(dirfd, U1, &r) == -ENOENT);
        check(faccessat(dirfd, "../mdev-hooks.by-parent/" P1 "/" U1, F_OK, 0) < 0 && errno == ENOENT);
        check(ledger_remove_nosync(dirfd, U1) == 0); /* idempotent, as ledger_remove() */
        list_parent_check(dirfd, P1, 1, U2, 0);
        check(ledger_sync(dirfd) == 0);
        close(dirfd);
}

/* No temp file left in the record directory. */
static void check_no_temp_files(int dirfd) {
        _cleanup_strv_free_ char **names = NULL;

        check(dir_list_at(dirfd, ".", &names) == 0);
        for (char **n = names; *n; n++)
                check(strlen(*n) < 4 || strcmp(*n + strlen(*n) - 4, ".tmp") != 0);
}

/* Many records at once: each in place, with its index entries, as written
 * one by one; an invalid one stops the batch before any is in place. */
static void test_write_many(int rootfd) {
        int dirfd = open_fresh_ledger(rootfd, "many");
        _cleanup_free_ LedgerEntry *l = NULL;
        LedgerEntry e[16], r;
        size_t n;

        for (unsigned i = 0; i < ELEMENTSOF(e); i++) {
                char u[UUID_STRING_MAX], g[16];
                snprintf(u, sizeof u, "1000%04x-0000-4000-8000-000000000000", i);
                snprintf(g, sizeof g, "web%u", i % 3);
                entry_init(&e[i], u, g);
                e[i].state = LEDGER_INCOMING;
        }
        check(ledger_write_many_nosync(dirfd, e, ELEMENTSOF(e)) == 0);
        for (unsigned i = 0; i < ELEMENTSOF(e); i++) {
                check(ledger_read(dirfd, e[i].uuid, &r) == 0);
                check(memcmp(&e[i], &r, sizeof r) == 0);
        }
        list_parent_check(dirfd, P1, ELEMENTSOF(e), e[0].uuid, 0);
        check(ledger_list_guest(dirfd, "web1", &l, &n) == 0);
        check(n == 5);
        check_no_temp_files(dirfd);

        /* Rewritten in a batch: replaced in place. */
        for (unsigned i = 0; i < ELEMENTSOF(e); i++)
                e[i].state = LEDGER_ASSIGNED;
        check(ledger_write_many_nosync(dirfd, e, ELEMENTSOF(e)) == 0);
        check(ledger_read(dirfd, e[7].uuid, &r) == 0 && r.state == LEDGER_ASSIGNED);

        /* The 4th of 8 new ones is invalid: none of the 8 is written. */
        for (unsigned i = 0; i < 8; i++) {
                snprintf(e[i].uuid, sizeof e[i].uuid, "2000%04x-0000-4000-8000-000000000000", i);
                e[i].state = LEDGER_INCOMING;
        }
        snprintf(e[3].parent, sizeof e[3].parent, "../x");
        check(ledger_write_many_nosync(dirfd, e, 8) == -EINVAL);
        for (unsigned i = 0; i < 8; i++)
                check(ledger_read(dirfd, e[i].uuid, &r) == -ENOENT);
        check_no_temp_files(dirfd);
        check(ledger_sync(dirfd) == 0);
        close(dirfd);
}

/* Index entries are links to one anchor file per index, not inodes of their
 * own; where the anchor cannot be linked, they are files, and still found. */
static void test_index_entries_are_links(int rootfd) {
        int dirfd = open_fresh_ledger(rootfd, "links");
        struct stat anchor, st;
        LedgerEntry e;

        entry_init(&e, U1, "web1");
        check(ledger_write(dirfd, &e) == 0);
        entry_init(&e, U2, "web2");
        check(ledger_write(dirfd, &e) == 0);
        check(fstatat(dirfd, "../mdev-hooks.by-guest/@entry", &anchor, AT_SYMLINK_NOFOLLOW) == 0);
        check(S_ISREG(anchor.st_mode) && anchor.st_size == 0 && anchor.st_nlink == 3);
        check(fstatat(dirfd, "../mdev-hooks.by-parent/" P1 "/" U1, &st, AT_SYMLINK_NOFOLLOW) == 0);
        check(fstatat(dirfd, "../mdev-hooks.by-parent/@entry", &anchor, AT_SYMLINK_NOFOLLOW) == 0);
        check(st.st_ino == anchor.st_ino && anchor.st_nlink == 3);
        list_parent_check(dirfd, P1, 2, U2, 0);
        check(ledger_remove(dirfd, U1) == 0);
        check(fstatat(dirfd, "../mdev-hooks.by-parent/@entry", &anchor, AT_SYMLINK_NOFOLLOW) == 0);
        check(anchor.st_nlink == 2);

        /* An anchor that cannot be linked (a directory: EPERM): files. */
        check(unlinkat(dirfd, "../mdev-hooks.by-parent/@entry", 0) == 0);
        check(mkdirat(dirfd, "../mdev-hooks.by-parent/@entry", 0700) == 0);
        entry_init(&e, U3, "web3");
        check(ledger_write(dirfd, &e) == 0);
        check(fstatat(dirfd, "../mdev-hooks.by-parent/" P1 "/" U3, &st, AT_SYMLINK_NOFOLLOW) == 0);
        check(S_ISREG(st.st_mode) && st.st_nlink == 1);
        list_parent_check(dirfd, P1, 2, U3, 0);
        close(dirfd);
}

/* Records without a guest are found through by-guest/@free, which is built
 * whole from every record the first time one is written, pruned on reading,
 * and kept when empty. */
static void test_free_index(int rootfd) {
        int dirfd = open_fresh_ledger(rootfd, "free");
        _cleanup_free_ LedgerEntry *l = NULL;
        LedgerEntry e;
        size_t n = 99;

        /* As an older version left it: a guest index, free records unindexed. */
        entry_init(&e, U4, "web1");
        check(ledger_write(dirfd, &e) == 0);
        write_by_hand(dirfd, U3, P1); /* state free, no guest */
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free", F_OK, 0) < 0 && errno == ENOENT);
        /* A writer killed while building it left part of a build behind. */
        check(mkdirat(dirfd, "../mdev-hooks.by-guest/@free.tmp", 0700) == 0);
        write_file(dirfd, "../mdev-hooks.by-guest/@free.tmp/" U1, "");

        /* The first free record written builds the index, with U3 in it. */
        entry_init(&e, U5, "");
        e.state = LEDGER_FREE;
        check(ledger_write(dirfd, &e) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free/" U3, F_OK, 0) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free/" U5, F_OK, 0) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free/" U4, F_OK, 0) < 0);
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free/" U1, F_OK, 0) < 0 && errno == ENOENT);
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free.tmp", F_OK, 0) < 0 && errno == ENOENT);
        check(ledger_list_free(dirfd, &l, &n) == 0);
        check(n == 2 && streq(l[0].uuid, U3) && streq(l[1].uuid, U5));
        free(steal_pointer(&l));

        /* Given to a guest: no longer listed, its entry pruned. */
        entry_init(&e, U5, "web2");
        check(ledger_write(dirfd, &e) == 0);
        check(ledger_list_free(dirfd, &l, &n) == 0);
        check(n == 1 && streq(l[0].uuid, U3));
        free(steal_pointer(&l));
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free/" U5, F_OK, 0) < 0 && errno == ENOENT);

        /* Removed: its entry goes with it; the empty index stays. */
        check(ledger_remove(dirfd, U3) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free/" U3, F_OK, 0) < 0 && errno == ENOENT);
        check(ledger_list_free(dirfd, &l, &n) == 0);
        check(n == 0);
        free(steal_pointer(&l));
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free", F_OK, 0) == 0);
        close(dirfd);

        /* So does the first listing, where no free record was ever written. */
        dirfd = open_fresh_ledger(rootfd, "free2");
        write_by_hand(dirfd, U3, P1);
        entry_init(&e, U4, "web1");
        check(ledger_write(dirfd, &e) == 0);
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free", F_OK, 0) < 0 && errno == ENOENT);
        check(ledger_list_free(dirfd, &l, &n) == 0);
        check(n == 1 && streq(l[0].uuid, U3));
        free(steal_pointer(&l));
        check(faccessat(dirfd, "../mdev-hooks.by-guest/@free/" U3, F_OK, 0) == 0);
        close(dirfd);
}

static void test_open(int rootfd) {
        int fd = -1;
        struct stat st;

        check(ledger_open_existing(rootfd, &fd) == -ENOENT);
        check(ledger_open(rootfd, &fd) == 0);
        check(fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
        close(fd);
        check(ledger_open_existing(rootfd, &fd) == 0);
        close(fd);
}

int main(void) {
        int rootfd, dirfd;

        check(mkdtemp(tmpdir));
        rootfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(rootfd >= 0);
        test_open(rootfd);
        check(ledger_open(rootfd, &dirfd) == 0);

        test_strings();
        test_round_trip(dirfd);
        test_round_trip_hostile_guest_name(dirfd);
        test_atomic_replace(dirfd);
        test_spare(dirfd);
        test_invalid_entries_are_not_written(dirfd);
        test_bad_files(dirfd);
        test_file_size_limit(dirfd);
        test_entry_set_free(dirfd);
        test_list(dirfd);
        test_list_guest_exact(dirfd);
        test_guest_index(rootfd);
        check(setenv("TEST_LEDGER_ROOT", tmpdir, 1) == 0);
        test_parent_index_lists_by_parent(rootfd);
        test_parent_index_prunes_stale_entries(rootfd);
        test_parent_index_missing_falls_back(rootfd);
        test_batch_without_directory_sync(rootfd);
        test_write_many(rootfd);
        test_index_entries_are_links(rootfd);
        test_free_index(rootfd);

        close(dirfd);
        close(rootfd);
        tmpdir_remove(tmpdir);
        return 0;
}
