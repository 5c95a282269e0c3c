/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Discovery (sysfs.c) on the fixture trees and on small trees made here:
 * parents, types, optional files, mdevs and their links, precise errors.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "check.h"
#include "fixture.h"
#include "sysfs.h"

#define TYPES "sys/class/mdev_bus/0000:84:00.0/mdev_supported_types"

static int open_fixture(const char *name) {
        char path[512];
        int fd;

        snprintf(path, sizeof path, SRCDIR "/tests/fixtures/%s", name);
        fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(fd >= 0);
        return fd;
}

static void test_parents_and_types(void) {
        int root = open_fixture("nvidia");
        char **l = NULL;

        check(sysfs_parent_list(root, &l) == 0);
        check(strv_length(l) == 4);
        check(streq(l[0], "0000:84:00.0"));
        check(streq(l[3], "0000:87:00.0"));
        strv_free(l);

        check(sysfs_parent_types(root, "0000:85:00.0", &l) == 0);
        check(strv_length(l) == 11);
        check(streq(l[0], "nvidia-35"));
        check(streq(l[10], "nvidia-45"));
        strv_free(l);

        error_clear();
        check(sysfs_parent_types(root, "0000:99:00.0", &l) == -ENOENT);
        check(strstr(error_get(-ENOENT), "'0000:99:00.0' is not a registered mdev parent"));
        check(sysfs_parent_types(root, "../etc", &l) == -EINVAL);

        check(sysfs_parent_is_registered(root, "0000:86:00.0") == 1);
        check(sysfs_parent_is_registered(root, "0000:99:00.0") == 0);
        check(sysfs_parent_is_registered(root, "a/b") == -EINVAL);
        check(sysfs_parent_device_present(root, "0000:87:00.0") == 1);
        check(sysfs_parent_device_present(root, "0000:99:00.0") == 0);
        close(root);
}

static void test_type_read(void) {
        int root = open_fixture("nvidia");
        SysfsType t;
        unsigned u;

        check(sysfs_type_read(root, "0000:84:00.0", "nvidia-35", &t) == 0);
        check(streq(t.id, "nvidia-35"));
        check(streq(t.name, "GRID M60-0B"));
        check(streq(t.device_api, "vfio-pci"));
        check(strstr(t.description, "max_instance=16"));
        check(t.available == 15);
        sysfs_type_done(&t);

        check(sysfs_type_available(root, "0000:87:00.0", "nvidia-45", &u) == 0);
        check(u == 1);
        check(sysfs_type_count(root, "0000:86:00.0", "nvidia-36", &u) == 0);
        check(u == 2);
        check(sysfs_type_count(root, "0000:87:00.0", "nvidia-36", &u) == 0);
        check(u == 0);

        error_clear();
        check(sysfs_type_read(root, "0000:84:00.0", "nvidia-99", &t) == -ENOENT);
        check(strstr(error_get(-ENOENT), "'0000:84:00.0' does not offer type 'nvidia-99'"));
        check(sysfs_type_available(root, "0000:84:00.0", "..", &u) == -EINVAL);
        check(sysfs_type_count(root, "0000:84:00.0", "nvidia-99", &u) == -ENOENT);
        close(root);

        /* mtty has no description file */
        root = open_fixture("mtty");
        check(sysfs_type_read(root, "mtty", "mtty-2", &t) == 0);
        check(streq(t.name, "Dual port serial"));
        check(t.description == NULL);
        check(t.available == 11);
        sysfs_type_done(&t);
        check(sysfs_parent_device_present(root, "mtty") == 1);
        close(root);
}

static void test_mdevs(void) {
        int root = open_fixture("nvidia");
        SysfsMdev *m = NULL, one;
        size_t n = 0;

        check(sysfs_mdev_list(root, &m, &n) == 0);
        check(n == 4);
        for (size_t i = 1; i < n; i++)
                check(strcmp(m[i - 1].uuid, m[i].uuid) < 0);
        check(streq(m[0].uuid, "1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01"));
        check(streq(m[0].parent, "0000:84:00.0"));
        check(streq(m[0].type, "nvidia-35"));
        check(streq(m[3].parent, "0000:86:00.0"));
        check(streq(m[3].type, "nvidia-36"));
        free(m);

        check(sysfs_mdev_get(root, "2A7D0C4E-9F13-4B6A-8C25-5E1F7A3B9C02", &one) == 0);
        check(streq(one.uuid, "2a7d0c4e-9f13-4b6a-8c25-5e1f7a3b9c02"));
        check(streq(one.parent, "0000:85:00.0"));
        check(sysfs_mdev_get(root, "5d0a3f7b-2c46-4e9d-9f58-8b4c0d6e2f05", &one) == -ENOENT);
        check(sysfs_mdev_get(root, "not-a-uuid", &one) == -EINVAL);
        close(root);

        root = open_fixture("mtty");
        check(sysfs_mdev_get(root, "8a3d6c0e-5f79-41c2-8c8b-1e7f3a9b5c08", &one) == 0);
        check(streq(one.parent, "mtty"));
        check(streq(one.type, "mtty-2"));
        close(root);
}

/* --- a small tree of our own, to break ------------------------------- */

static char tmpdir[] = "/tmp/test-sysfs-XXXXXX";

static void put(int root, const char *path, const char *text) {
        char dir[512];
        char *slash;
        int fd;

        snprintf(dir, sizeof dir, "%s", path);
        slash = strrchr(dir, '/');
        *slash = '\0';
        check(mkdir_p_at(root, dir, 0755) == 0);
        fd = openat(root, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        check(fd >= 0);
        check(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
}

/* create and remove write to the kernel's files */
static void check_create_remove(int root) {
        char buf[128];

        check(sysfs_mdev_create(root, "0000:84:00.0", "good", "1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01") == 0);
        check(read_small_at(root, TYPES "/good/create", buf, sizeof buf) == 0);
        check(streq(buf, "1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01"));
        check(sysfs_mdev_create(root, "0000:84:00.0", "nope", "1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01") == -ENOENT);
        check(sysfs_mdev_create(root, "0000:84:00.0", "../x", "1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01") == -EINVAL);
        check(sysfs_mdev_create(root, "0000:84:00.0", "good", "../../x") == -EINVAL);
        check(sysfs_mdev_remove(root, "1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01") == -ENOENT);

}

/* an mdev link that does not end in its UUID, and one without mdev_type */
static void check_mdev_links(int root) {
        check(mkdir_p_at(root, "sys/bus/mdev/devices", 0755) == 0);
        check(mkdir_p_at(root, "sys/devices/p/0000:84:00.0/1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01", 0755) == 0);
        check(symlinkat("../../../devices/p/0000:84:00.0/other", root,
                        "sys/bus/mdev/devices/2a7d0c4e-9f13-4b6a-8c25-5e1f7a3b9c02") == 0);
        check(symlinkat("../../../devices/p/0000:84:00.0/1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01", root,
                        "sys/bus/mdev/devices/1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01") == 0);
        {
                SysfsMdev m;

                error_clear();
                check(sysfs_mdev_get(root, "2a7d0c4e-9f13-4b6a-8c25-5e1f7a3b9c02", &m) == -EBADMSG);
                check(strstr(error_get(-EBADMSG), "not to <parent>/2a7d0c4e"));
                error_clear();
                check(sysfs_mdev_get(root, "1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01", &m) == -EBADMSG);
                check(strstr(error_get(-EBADMSG), "/mdev_type' is missing"));
                check(symlinkat("../mdev_supported_types/good", root,
                                "sys/devices/p/0000:84:00.0/1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01/mdev_type") == 0);
                check(sysfs_mdev_get(root, "1f3c9a2e-7b44-4d51-9e0a-2c6b8d4f1a01", &m) == 0);
                check(streq(m.parent, "0000:84:00.0") && streq(m.type, "good"));
        }
}

static void test_errors_and_isolation(void) {
        int root;
        SysfsType t;
        unsigned u;

        check(mkdtemp(tmpdir));
        root = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(root >= 0);

        /* No mdev_bus, no mdev bus: empty, not an error. */
        {
                char **l = NULL;
                SysfsMdev *m = NULL;
                size_t n = 1;

                check(sysfs_parent_list(root, &l) == 0);
                check(strv_length(l) == 0);
                strv_free(l);
                check(sysfs_mdev_list(root, &m, &n) == 0);
                check(n == 0);
                free(m);
        }

        put(root, TYPES "/good/available_instances", "3\n");
        put(root, TYPES "/good/device_api", "vfio-pci\n");
        put(root, TYPES "/good/create", "");
        check(mkdir_p_at(root, TYPES "/good/devices", 0755) == 0);
        /* the other types of the parent are broken in every way */
        put(root, TYPES "/bad/available_instances", "three\n");
        put(root, TYPES "/bad/device_api", "vfio-pci\n");
        put(root, TYPES "/noapi/available_instances", "1\n");
        put(root, TYPES "/empty/available_instances", "\n");
        put(root, TYPES "/emptyapi/available_instances", "1\n");
        put(root, TYPES "/emptyapi/device_api", "\n");

        /* Reading one type does not read (or trip over) the others. */
        check(sysfs_type_read(root, "0000:84:00.0", "good", &t) == 0);
        check(t.available == 3 && !t.name && !t.description);
        sysfs_type_done(&t);
        check(sysfs_type_count(root, "0000:84:00.0", "good", &u) == 0 && u == 0);

        error_clear();
        check(sysfs_type_available(root, "0000:84:00.0", "bad", &u) == -EBADMSG);
        check(strstr(error_get(-EBADMSG), "/" TYPES "/bad/available_instances' does not hold a number: 'three'"));
        error_clear();
        check(sysfs_type_available(root, "0000:84:00.0", "empty", &u) == -EBADMSG);
        check(strstr(error_get(-EBADMSG), "/" TYPES "/empty/available_instances'"));
        error_clear();
        check(sysfs_type_read(root, "0000:84:00.0", "noapi", &t) == -ENOENT);
        check(strstr(error_get(-ENOENT), "cannot read '/" TYPES "/noapi/device_api'"));
        error_clear();
        check(sysfs_type_read(root, "0000:84:00.0", "emptyapi", &t) == -EBADMSG);
        check(strstr(error_get(-EBADMSG), "/" TYPES "/emptyapi/device_api' is empty"));
        error_clear();
        check(sysfs_type_count(root, "0000:84:00.0", "bad", &u) == -ENOENT);
        check(strstr(error_get(-ENOENT), "/" TYPES "/bad/devices'"));

        check_create_remove(root);
        check_mdev_links(root);
        close(root);
        tmpdir_remove(tmpdir);
}

/* A listing keeps only the names that are safe as a path component (the
 * filter works in place: the kept ones in order, the others dropped). */
static void test_unsafe_names_skipped(void) {
        char dir[] = "/tmp/test-sysfs-names-XXXXXX", long_name[160];
        char **l = NULL;
        int root;

        check(mkdtemp(dir));
        root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(root >= 0);
        memset(long_name, 'a', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = '\0';
        check(mkdir_p_at(root, "sys/class/mdev_bus/0000:01:00.0/mdev_supported_types/nvidia-1", 0755) == 0);
        check(mkdir_p_at(root, "sys/class/mdev_bus/0000:01:00.0/mdev_supported_types/a b", 0755) == 0);
        check(mkdir_p_at(root, "sys/class/mdev_bus/0000:01:00.0/mdev_supported_types/nvidia-2", 0755) == 0);
        check(mkdir_p_at(root, "sys/class/mdev_bus/bad name", 0755) == 0);
        check(mkdir_p_at(root, "sys/class/mdev_bus/0000:02:00.0", 0755) == 0);
        check(mkdirat(root, "sys/class/mdev_bus/bad$", 0755) == 0);
        {
                char path[256];

                snprintf(path, sizeof path, "sys/class/mdev_bus/%s", long_name);
                check(mkdirat(root, path, 0755) == 0);
        }

        check(sysfs_parent_list(root, &l) == 0);
        check(strv_length(l) == 2);
        check(streq(l[0], "0000:01:00.0") && streq(l[1], "0000:02:00.0"));
        strv_free(l);
        check(sysfs_parent_types(root, "0000:01:00.0", &l) == 0);
        check(strv_length(l) == 2);
        check(streq(l[0], "nvidia-1") && streq(l[1], "nvidia-2"));
        strv_free(l);
        /* nothing at all kept: an empty list, not NULL */
        check(sysfs_parent_types(root, "0000:02:00.0", &l) == -ENOENT);
        check(mkdirat(root, "sys/class/mdev_bus/0000:02:00.0/mdev_supported_types", 0755) == 0);
        check(mkdirat(root, "sys/class/mdev_bus/0000:02:00.0/mdev_supported_types/x y", 0755) == 0);
        check(sysfs_parent_types(root, "0000:02:00.0", &l) == 0);
        check(l && strv_length(l) == 0);
        strv_free(l);
        close(root);
        tmpdir_remove(dir);
}

/* --- candidates read from the directories that hold their devices ----- */

/* A parent whose device is devices/<dir>/<name> (dir "": devices/<name>), linked from class/mdev_bus
 * as the kernel links it, with one type holding `text`. */
static void devdir_parent(int root, const char *dir, const char *name, const char *type, const char *text) {
        char path[512], target[512];

        snprintf(path, sizeof path, "sys/devices/%s%s%s/mdev_supported_types/%s/available_instances", dir,
                 dir[0] ? "/" : "", name, type);
        put(root, path, text);
        snprintf(path, sizeof path, "sys/class/mdev_bus/%s", name);
        snprintf(target, sizeof target, "../../devices/%s%s%s", dir, dir[0] ? "/" : "", name);
        check(mkdir_p_at(root, "sys/class/mdev_bus", 0755) == 0);
        check(symlinkat(target, root, path) == 0);
}

/* Both readings of one candidate: the same result, value and message. */
static int devdir_same(int root, int busfd, SysfsDevDirs *d, const char *parent, const char *type) {
        char want_msg[512];
        unsigned want = 777, got = 777;
        int r, k;

        r = sysfs_type_available_at(root, busfd, parent, type, &want);
        snprintf(want_msg, sizeof want_msg, "%s", r < 0 ? error_get(r) : "");
        error_clear();
        k = sysfs_type_available_dirs(root, busfd, d, parent, type, &got);
        check(k == r);
        check(got == want);
        if (k < 0)
                check(streq(error_get(k), want_msg));
        error_clear();
        return k;
}

static void test_devdirs(void) {
        char dir[] = "/tmp/test-sysfs-dirs-XXXXXX";
        static const char *const bridges[] = { "pci0000:00", "pci0000:00/0000:00:01.0", "pci0000:80/0000:80:02.0" };
        SysfsDevDirs d;
        char name[32], text[16];
        unsigned u;
        int root, busfd;

        check(mkdtemp(dir));
        root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        check(root >= 0);
        /* 12 parents on three buses, each bus behind its own bridge, read
         * with the buses interleaved */
        for (unsigned i = 0; i < 12; i++) {
                snprintf(name, sizeof name, "0000:%02x:%02x.0", 0x10 + i % 3, i / 3);
                snprintf(text, sizeof text, "%u\n", i);
                devdir_parent(root, bridges[i % 3], name, "t", text);
        }
        devdir_parent(root, "pci0000:00", "0000:20:00.0", "t", "three\n");          /* not a number */
        devdir_parent(root, "virtual/mtty", "mtty", "t", "5\n");                     /* not a PCI address */
        devdir_parent(root, "", "0000:21:00.0", "t", "6\n");                         /* right under devices/ */
        check(sysfs_bus_open(root, &busfd) == 0);
        sysfs_devdirs_init(&d);

        for (int pass = 0; pass < 2; pass++)
                for (unsigned i = 0; i < 12; i++) {
                        snprintf(name, sizeof name, "0000:%02x:%02x.0", 0x10 + i % 3, i / 3);
                        check(devdir_same(root, busfd, &d, name, "t") == 0);
                        check(sysfs_type_available_dirs(root, busfd, &d, name, "t", &u) == 0 && u == i);
                }
        check(d.n == 3);
        check(devdir_same(root, busfd, &d, "0000:20:00.0", "t") == -EBADMSG);
        check(devdir_same(root, busfd, &d, "mtty", "t") == 0);
        check(devdir_same(root, busfd, &d, "0000:21:00.0", "t") == 0);
        check(devdir_same(root, busfd, &d, "0000:10:00.0", "other") == -ENOENT);
        check(devdir_same(root, busfd, &d, "0000:30:00.0", "t") == -ENOENT);
        check(d.n == 3);
        /* a parent that goes: its types go with it (the kernel's
         * parent_remove_sysfs_files()), then its link */
        check(unlinkat(root, "sys/devices/pci0000:00/0000:10:00.0/mdev_supported_types/t/available_instances", 0) == 0);
        check(unlinkat(root, "sys/class/mdev_bus/0000:10:00.0", 0) == 0);
        check(devdir_same(root, busfd, &d, "0000:10:00.0", "t") == -ENOENT);
        check(devdir_same(root, busfd, &d, "0000:10:01.0", "t") == 0);
        /* no table: as sysfs_type_available_at() */
        check(sysfs_type_available_dirs(root, busfd, NULL, "0000:11:01.0", "t", &u) == 0 && u == 4);
        sysfs_devdirs_done(&d);

        /* more directories than the table holds: the rest read as before */
        sysfs_devdirs_init(&d);
        for (unsigned i = 0; i < SYSFS_DEVDIRS_MAX + 4; i++) {
                char bridge[64];

                snprintf(bridge, sizeof bridge, "pci0000:40/0000:40:%02x.0", i);
                snprintf(name, sizeof name, "0000:41:%02x.0", i);
                snprintf(text, sizeof text, "%u\n", i + 100);
                devdir_parent(root, bridge, name, "t", text);
        }
        for (unsigned i = 0; i < SYSFS_DEVDIRS_MAX + 4; i++) {
                snprintf(name, sizeof name, "0000:41:%02x.0", i);
                check(devdir_same(root, busfd, &d, name, "t") == 0);
                check(sysfs_type_available_dirs(root, busfd, &d, name, "t", &u) == 0 && u == i + 100);
        }
        check(d.n == SYSFS_DEVDIRS_MAX);
        sysfs_devdirs_done(&d);
        close(busfd);
        close(root);
        tmpdir_remove(dir);
}

int main(void) {
        test_parents_and_types();
        test_unsafe_names_skipped();
        test_type_read();
        test_mdevs();
        test_errors_and_isolation();
        test_devdirs();
        return 0;
}
