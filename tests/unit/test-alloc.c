/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Allocation (alloc.c): placement order, max_instances, type resolution and
 * the failure message, on a plain directory tree shaped like mdev sysfs. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "alloc.h"
#include "check.h"
#include "fixture.h"

#define BOOT "1a2b3c4d-0000-4000-8000-000000000001"

static char tmpdir[] = "/tmp/test-alloc-XXXXXX";
static int rootfd = -1;

/* A candidate of a 16-instance type that holds count mdevs of it. */
static AllocCandidate cand(const char *parent, unsigned count, unsigned order) {
        AllocCandidate c = { .count = count, .available = 16 - count, .order = order, .verdict = ALLOC_OK };

        snprintf(c.parent, sizeof c.parent, "%s", parent);
        snprintf(c.type, sizeof c.type, "nvidia-35");
        return c;
}

static void test_sort_pack(void) {
        AllocCandidate c[] = { cand("0000:84:00.0", 1, 0), cand("0000:86:00.0", 3, 0),
                               cand("0000:85:00.0", 3, 0), cand("0000:83:00.0", 0, 0) };

        alloc_candidates_sort(c, ELEMENTSOF(c), CONFIG_PLACEMENT_PACK);
        check(streq(c[0].parent, "0000:85:00.0")); /* most, tie by address */
        check(streq(c[1].parent, "0000:86:00.0"));
        check(streq(c[2].parent, "0000:84:00.0"));
        check(streq(c[3].parent, "0000:83:00.0"));
}

static void test_sort_spread(void) {
        AllocCandidate c[] = { cand("0000:84:00.0", 1, 0), cand("0000:86:00.0", 0, 0),
                               cand("0000:85:00.0", 0, 0), cand("0000:83:00.0", 5, 0) };

        alloc_candidates_sort(c, ELEMENTSOF(c), CONFIG_PLACEMENT_SPREAD);
        check(streq(c[0].parent, "0000:85:00.0")); /* fewest, tie by address */
        check(streq(c[1].parent, "0000:86:00.0"));
        check(streq(c[2].parent, "0000:84:00.0"));
        check(streq(c[3].parent, "0000:83:00.0"));
}

static void test_sort_type_order_breaks_ties(void) {
        AllocCandidate c[] = { cand("0000:84:00.0", 0, 1), cand("0000:85:00.0", 0, 0) };

        alloc_candidates_sort(c, ELEMENTSOF(c), CONFIG_PLACEMENT_PACK);
        check(streq(c[0].parent, "0000:85:00.0"));
}

static void test_max_left(void) {
        check(alloc_max_left(0, 1000) == UINT_MAX);
        check(alloc_max_left(4, 0) == 4);
        check(alloc_max_left(4, 3) == 1);
        check(alloc_max_left(4, 4) == 0);
        check(alloc_max_left(4, 9) == 0);
}

static void test_describe(void) {
        AllocCandidate c = cand("0000:84:00.0", 16, 0);
        char buf[256];

        c.verdict = ALLOC_FULL;
        c.available = 0;
        check(alloc_candidate_describe(&c, buf, sizeof buf) > 0);
        check(streq(buf, "0000:84:00.0 has 0 of 16 left"));
        c.verdict = ALLOC_OTHER_TYPE;
        snprintf(c.other_type, sizeof c.other_type, "nvidia-36");
        check(alloc_candidate_describe(&c, buf, sizeof buf) > 0);
        check(streq(buf, "0000:84:00.0 is configured for nvidia-36"));
        c.verdict = ALLOC_NOT_REGISTERED;
        check(alloc_candidate_describe(&c, buf, sizeof buf) > 0);
        check(strstr(buf, "not registered"));
        c.verdict = ALLOC_CREATE_FAILED;
        c.create_errno = ENOSPC;
        check(alloc_candidate_describe(&c, buf, sizeof buf) > 0);
        check(strstr(buf, "refused create"));
        check(alloc_candidate_describe(&c, buf, 8) == -ENOBUFS);
}

/* --- a config and a tree --------------------------------------------- */

static char *addr35[] = { (char *) "0000:84:00.0", (char *) "0000:85:00.0", NULL };
static char *addr36[] = { (char *) "0000:86:00.0", NULL };
static ConfigType types[] = {
        { .name = (char *) "nvidia-35", .addresses = addr35, .max_instances = 0, .mdev_class = (char *) "VGPU" },
        { .name = (char *) "nvidia-36", .addresses = addr36, .mdev_class = (char *) "CUSTOM_X" },
        { .name = (char *) "nvidia-37", .addresses = NULL, .mdev_class = (char *) "CUSTOM_X" },
};
static Config config = { .types = types, .n_types = ELEMENTSOF(types), .default_type = &types[2] };

/* An existing mdev: the bus link, its type link, and its entry in devices/. */
static void mkmdev(const char *parent, const char *type, const char *uuid) {
        char path[512], target[512];

        snprintf(path, sizeof path, "sys/devices/%s/%s", parent, uuid);
        check(mkdir_p_at(rootfd, path, 0755) == 0);
        snprintf(path, sizeof path, "sys/devices/%s/%s/mdev_type", parent, uuid);
        snprintf(target, sizeof target, "../mdev_supported_types/%s", type);
        check(symlinkat(target, rootfd, path) == 0);
        check(mkdir_p_at(rootfd, "sys/bus/mdev/devices", 0755) == 0);
        snprintf(path, sizeof path, "sys/bus/mdev/devices/%s", uuid);
        snprintf(target, sizeof target, "../../../devices/%s/%s", parent, uuid);
        check(symlinkat(target, rootfd, path) == 0);
        snprintf(path, sizeof path, "sys/class/mdev_bus/%s/mdev_supported_types/%s/devices/%s", parent, type, uuid);
        fixture_file(rootfd, path, "");
}

static void test_want_resolve(Alloc *a) {
        DomxmlMdev m = { .uuid = "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01" };
        SysfsMdev existing = { .uuid = "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01", .parent = "p", .type = "nvidia-36" };
        AllocWant w;

        /* The default type when nothing else says. */
        check(alloc_want_resolve(a, &m, NULL, &w) == 0);
        check(strv_length(w.types) == 1 && streq(w.types[0], "nvidia-37"));
        alloc_want_done(&w);
        /* The existing mdev's type before the default. */
        check(alloc_want_resolve(a, &m, &existing, &w) == 0);
        check(streq(w.types[0], "nvidia-36"));
        alloc_want_done(&w);
        /* A class: every enabled type of it, in config order. */
        snprintf(m.mdev_class, sizeof m.mdev_class, "CUSTOM_X");
        check(alloc_want_resolve(a, &m, &existing, &w) == 0);
        check(strv_length(w.types) == 2 && streq(w.types[0], "nvidia-36") && streq(w.types[1], "nvidia-37"));
        alloc_want_done(&w);
        /* type= wins over class=, and parent= is kept as the pin. */
        snprintf(m.type, sizeof m.type, "nvidia-35");
        snprintf(m.parent, sizeof m.parent, "0000:85:00.0");
        check(alloc_want_resolve(a, &m, &existing, &w) == 0);
        check(strv_length(w.types) == 1 && streq(w.types[0], "nvidia-35") && streq(w.parent, "0000:85:00.0"));
        alloc_want_done(&w);
        /* An unknown class. */
        m.type[0] = '\0';
        snprintf(m.mdev_class, sizeof m.mdev_class, "CUSTOM_NONE");
        check(alloc_want_resolve(a, &m, NULL, &w) == -EINVAL);
        /* No default: the message says which entry to add. */
        m.mdev_class[0] = '\0';
        config.default_type = NULL;
        check(alloc_want_resolve(a, &m, NULL, &w) == -ENOENT);
        check(strstr(error_get(-ENOENT), "<mh:mdev uuid=\"b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01\" type="));
        config.default_type = &types[2];
}

static AllocWant want35(void) {
        AllocWant w = { .uuid = "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b09", .what = "nvidia-35" };

        check(strv_extend(&w.types, "nvidia-35") == 0);
        return w;
}

static void test_create_no_capacity_message(Alloc *a) {
        AllocWant w = want35();
        LedgerEntry e;
        const char *msg;
        int r;

        /* 84 is full with 2 of its own; 85 has room but max_instances = 2 is reached. */
        types[0].max_instances = 2;
        r = alloc_create(a, &w, w.uuid, LEDGER_ASSIGNED, &e);
        check(r == -ENOSPC);
        msg = error_get(r);
        check(strstr(msg, "no capacity for nvidia-35: "));
        check(strstr(msg, "0000:84:00.0 has 0 of 2 left"));
        check(strstr(msg, "0000:85:00.0 is over max_instances"));
        check(strstr(msg, "0000:86:00.0 is configured for nvidia-36"));
        check(!strchr(msg, '\n'));
        check(a->n_undo <= 1);
        check(ledger_read(a->ledgerfd, w.uuid, &e) == -ENOENT); /* the intent record is gone */
        types[0].max_instances = 0;

        /* Without the cap, 85 is tried: the tree accepts the write but shows no
         * device, which is reported, and still no record is left behind. */
        r = alloc_create(a, &w, w.uuid, LEDGER_ASSIGNED, &e);
        check(r == -ENOSPC);
        check(strstr(error_get(r), "0000:85:00.0 accepted create but did not show the mdev"));
        check(ledger_read(a->ledgerfd, w.uuid, &e) == -ENOENT);
        check(alloc_rollback(a) == 0);
        alloc_want_done(&w);
}

static void test_type_not_enabled(Alloc *a) {
        AllocWant w = { .uuid = "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b09", .what = "nvidia-99" };
        LedgerEntry e;

        check(strv_extend(&w.types, "nvidia-99") == 0);
        check(alloc_create(a, &w, w.uuid, LEDGER_ASSIGNED, &e) == -ENOENT);
        check(strstr(error_get(-ENOENT), "type nvidia-99 is not enabled here; enabled: nvidia-35, nvidia-36, nvidia-37"));
        alloc_want_done(&w);
}

static void test_claim_and_rollback(Alloc *a) {
        AllocWant w = want35();
        SysfsMdev m = { .uuid = "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01", .parent = "0000:84:00.0", .type = "nvidia-35" };
        LedgerEntry e, other;
        Alloc b;

        check(alloc_claim(a, &w, &m, LEDGER_ASSIGNED, &e) == 0);
        check(e.origin == LEDGER_BORROWED && streq(e.guest, "web1"));
        check(alloc_held_by_other(a, m.uuid, NULL) == 0);

        /* Another guest is refused, naming web1. */
        alloc_init(&b, a->rootfd, a->ledgerfd, &config, "web2", NULL, BOOT);
        check(alloc_held_by_other(&b, m.uuid, &other) == 1 && streq(other.guest, "web1"));
        check(alloc_claim(&b, &w, &m, LEDGER_ASSIGNED, &e) == -EBUSY);
        check(strstr(error_get(-EBUSY), "held by guest 'web1'"));
        alloc_done(&b);

        /* Rolling back the claim forgets it again. */
        check(alloc_rollback(a) == 0);
        check(ledger_read(a->ledgerfd, m.uuid, &e) == -ENOENT);

        /* A type mismatch is refused. */
        snprintf(m.type, sizeof m.type, "nvidia-36");
        check(alloc_claim(a, &w, &m, LEDGER_ASSIGNED, &e) == -EMEDIUMTYPE);
        alloc_want_done(&w);
}

int main(void) {
        int ledgerfd;
        Alloc a;

        test_sort_pack();
        test_sort_spread();
        test_sort_type_order_breaks_ties();
        test_max_left();
        test_describe();

        check(mkdtemp(tmpdir));
        rootfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(rootfd >= 0);
        fixture_mdev_type(rootfd, "0000:84:00.0", "nvidia-35", 0);
        fixture_mdev_type(rootfd, "0000:85:00.0", "nvidia-35", 4);
        fixture_mdev_type(rootfd, "0000:86:00.0", "nvidia-35", 4);
        fixture_mdev_type(rootfd, "0000:86:00.0", "nvidia-36", 4);
        mkmdev("0000:84:00.0", "nvidia-35", "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b01");
        mkmdev("0000:84:00.0", "nvidia-35", "b1ae8bf6-38b0-4c81-9d44-78ce2e5d2b02");
        check(ledger_open(rootfd, &ledgerfd) == 0);

        alloc_init(&a, rootfd, ledgerfd, &config, "web1", NULL, BOOT);
        test_want_resolve(&a);
        test_create_no_capacity_message(&a);
        test_type_not_enabled(&a);
        test_claim_and_rollback(&a);
        alloc_done(&a);

        close(ledgerfd);
        close(rootfd);
        tmpdir_remove(tmpdir);
        return 0;
}
