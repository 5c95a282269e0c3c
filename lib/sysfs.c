/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's mdev sysfs (sysfs.h), always relative to the root dirfd.
 * Paths in messages are shown as the kernel's ("/sys/..."), whatever the root.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "nodedev.h"
#include "pciaddr.h"
#include "sysfs.h"

#define MDEV_BUS "sys/class/mdev_bus"
#define MDEV_DEVICES "sys/bus/mdev/devices"

/* "sys/class/mdev_bus/<parent>/mdev_supported_types/<type>[/<file>]" */
static int type_path(const char *parent, const char *type, const char *file, char *buf, size_t size) {
        int n;

        if (!name_is_valid(parent) || !name_is_valid(type))
                return -EINVAL;
        n = snprintf(buf, size, MDEV_BUS "/%s/mdev_supported_types/%s%s%s",
                     parent, type, file ? "/" : "", strempty(file));
        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        return 0;
}

/* The entries of a directory listing that are safe names (util.h:
 * name_is_valid): a name we could not safely use in a path is none of ours. */
/* Keeps, in place, the names that are safe as one path component: takes
 * *all over (a listing of 256 parents is filtered in one pass, not copied
 * one strv_extend() at a time). */
static int safe_names(char ***all, char ***ret) {
        char **l = *all;
        size_t k = 0;

        if (!l) {
                l = calloc(1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
        }
        for (size_t i = 0; l[i]; i++) {
                if (name_is_valid(l[i]))
                        l[k++] = l[i];
                else
                        free(l[i]);
        }
        l[k] = NULL;
        *all = NULL;
        *ret = l;
        return 0;
}

static int bad_name(const char *what, const char *s) {
        return error_set(-EINVAL, "invalid %s name '%s'", what, strna(s));
}

int sysfs_parent_list(int rootfd, char ***ret) {
        _cleanup_strv_free_ char **all = NULL;
        int r;

        r = dir_list_at(rootfd, MDEV_BUS, &all);
        if (r == -ENOENT) {
                /* No mdev_bus: the mdev module is not loaded, no parents
                 * (all is still NULL: an empty list). */
                return safe_names(&all, ret);
        }
        if (r < 0)
                return error_set(r, "cannot list '/" MDEV_BUS "': %s", strerror(-r));
        return safe_names(&all, ret);
}

int sysfs_parent_is_registered(int rootfd, const char *parent) {
        char path[PATH_MAX];
        struct stat st;

        if (!name_is_valid(parent))
                return bad_name("parent", parent);
        snprintf(path, sizeof path, MDEV_BUS "/%s", parent);
        if (fstatat(rootfd, path, &st, 0) < 0) {
                if (errno == ENOENT)
                        return 0;
                return error_set(-errno, "cannot stat '/%s': %s", path, strerror(errno));
        }
        return 1;
}

int sysfs_parent_nodedev_name(int rootfd, const char *parent, char **ret) {
        char path[PATH_MAX], target[PATH_MAX];
        const char *subsystem = NULL;
        char *name;
        ssize_t n;

        if (!name_is_valid(parent))
                return bad_name("parent", parent);
        snprintf(path, sizeof path, MDEV_BUS "/%s/subsystem", parent);
        n = readlinkat(rootfd, path, target, sizeof target - 1);
        if (n >= 0) {
                target[n] = '\0';
                subsystem = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
                if (!name_is_valid(subsystem))
                        return error_set(-EBADMSG, "'/%s' points to '%s': invalid subsystem name", path, target);
        } else if (errno != ENOENT)
                return error_set(-errno, "cannot read link '/%s': %s", path, strerror(errno));
        name = nodedev_name(subsystem, parent);
        if (!name)
                return -ENOMEM;
        *ret = name;
        return 0;
}

int sysfs_parent_device_present(int rootfd, const char *parent) {
        char path[PATH_MAX];
        struct stat st;

        if (!name_is_valid(parent))
                return bad_name("parent", parent);
        if (pci_address_is_valid(parent))
                snprintf(path, sizeof path, "sys/bus/pci/devices/%s", parent);
        else
                /* The kernel's sample drivers (mtty, mdpy, mbochs) make a
                 * virtual device class/name of the same name. */
                snprintf(path, sizeof path, "sys/devices/virtual/%s/%s", parent, parent);
        if (fstatat(rootfd, path, &st, 0) < 0) {
                if (errno == ENOENT || errno == ENOTDIR)
                        return 0;
                return error_set(-errno, "cannot stat '/%s': %s", path, strerror(errno));
        }
        return 1;
}

int sysfs_parent_types(int rootfd, const char *parent, char ***ret) {
        _cleanup_strv_free_ char **all = NULL;
        char path[PATH_MAX];
        int r;

        if (!name_is_valid(parent))
                return bad_name("parent", parent);
        snprintf(path, sizeof path, MDEV_BUS "/%s/mdev_supported_types", parent);
        r = dir_list_at(rootfd, path, &all);
        if (r == -ENOENT) {
                r = sysfs_parent_is_registered(rootfd, parent);
                if (r == 0)
                        return error_set(-ENOENT, "'%s' is not a registered mdev parent (no '/" MDEV_BUS "/%s')", parent, parent);
                return error_set(-ENOENT, "cannot list '/%s': %s", path, strerror(ENOENT));
        }
        if (r < 0)
                return error_set(r, "cannot list '/%s': %s", path, strerror(-r));
        return safe_names(&all, ret);
}

/* Opens the type's directory: -ENOENT (with a message) if the parent does not offer it. */
static int type_open(int rootfd, const char *parent, const char *type, int *ret_fd) {
        char path[PATH_MAX];
        int fd, r;

        r = type_path(parent, type, NULL, path, sizeof path);
        if (r == -EINVAL)
                return name_is_valid(parent) ? bad_name("type", type) : bad_name("parent", parent);
        if (r < 0)
                return r;
        fd = openat(rootfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return error_set(-ENOENT, "'%s' does not offer type '%s' (no '/%s')", parent, type, path);
                return error_set(-errno, "cannot open '/%s': %s", path, strerror(errno));
        }
        *ret_fd = fd;
        return 0;
}

static int type_read_available(int typefd, const char *parent, const char *type, unsigned *ret) {
        char buf[64];
        unsigned u;
        int r;

        r = read_small_at(typefd, "available_instances", buf, sizeof buf);
        if (r < 0)
                return error_set(r, "cannot read '/" MDEV_BUS "/%s/mdev_supported_types/%s/available_instances': %s",
                                 parent, type, strerror(-r));
        if (safe_atou(buf, &u) < 0)
                return error_set(-EBADMSG, "'/" MDEV_BUS "/%s/mdev_supported_types/%s/available_instances' does not hold a number: '%.32s'",
                                 parent, type, buf);
        *ret = u;
        return 0;
}

/* An optional file: NULL when absent, an error naming it otherwise. */
static int type_read_string(int typefd, const char *parent, const char *type, const char *file,
                            bool optional, char **ret) {
        char *s = NULL;
        int r;

        r = read_line_at(typefd, file, &s);
        if (r == -ENOENT && optional) {
                *ret = NULL;
                return 0;
        }
        if (r < 0)
                return error_set(r, "cannot read '/" MDEV_BUS "/%s/mdev_supported_types/%s/%s': %s",
                                 parent, type, file, strerror(-r));
        *ret = s;
        return 0;
}

void sysfs_type_done(SysfsType *t) {
        if (!t)
                return;
        free(t->id);
        free(t->name);
        free(t->description);
        free(t->device_api);
        *t = (SysfsType) { 0 };
}

int sysfs_type_read(int rootfd, const char *parent, const char *type, SysfsType *ret) {
        _cleanup_close_ int fd = -1;
        SysfsType t = { 0 };
        int r;

        r = type_open(rootfd, parent, type, &fd);
        if (r < 0)
                return r;
        r = type_read_available(fd, parent, type, &t.available);
        if (r < 0)
                return r;
        t.id = strdup(type);
        if (!t.id)
                return -ENOMEM;
        r = type_read_string(fd, parent, type, "device_api", false, &t.device_api);
        if (r >= 0 && !*t.device_api)
                r = error_set(-EBADMSG, "'/" MDEV_BUS "/%s/mdev_supported_types/%s/device_api' is empty", parent, type);
        if (r >= 0)
                r = type_read_string(fd, parent, type, "name", true, &t.name);
        if (r >= 0)
                r = type_read_string(fd, parent, type, "description", true, &t.description);
        if (r < 0) {
                sysfs_type_done(&t);
                return r;
        }
        *ret = t;
        return 0;
}

/* prepare calls this for every candidate parent: one open of the file
 * itself, not of the type's directory first. */
int sysfs_type_available(int rootfd, const char *parent, const char *type, unsigned *ret) {
        char path[PATH_MAX], buf[64];
        unsigned u;
        int r;

        r = type_path(parent, type, "available_instances", path, sizeof path);
        if (r == -EINVAL)
                return name_is_valid(parent) ? bad_name("type", type) : bad_name("parent", parent);
        if (r < 0)
                return r;
        r = read_small_at(rootfd, path, buf, sizeof buf);
        if (r == -ENOENT)
                return error_set(-ENOENT, "'%s' does not offer type '%s' (no '/%s')", parent, type, path);
        if (r < 0)
                return error_set(r, "cannot read '/%s': %s", path, strerror(-r));
        if (safe_atou(buf, &u) < 0)
                return error_set(-EBADMSG, "'/%s' does not hold a number: '%.32s'", path, buf);
        *ret = u;
        return 0;
}

int sysfs_bus_open(int rootfd, int *ret_fd) {
        int fd = openat(rootfd, MDEV_BUS, O_PATH | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return -errno; /* no message: callers read from the root instead */
        *ret_fd = fd;
        return 0;
}

/* available_instances' path below the directory that holds parent. */
static int available_path(const char *parent, const char *type, char *path, size_t size) {
        int k = snprintf(path, size, "%s/mdev_supported_types/%s/available_instances", parent, type);

        return k < 0 || (size_t) k >= size ? -ENAMETOOLONG : 0;
}

/* available_instances' text (buf), read from class/mdev_bus/<path>. */
static int available_parse(const char *path, const char *buf, unsigned *ret) {
        unsigned u;

        if (safe_atou(buf, &u) < 0)
                return error_set(-EBADMSG, "'/" MDEV_BUS "/%s' does not hold a number: '%.32s'", path, buf);
        *ret = u;
        return 0;
}

/* Relative to the kept directory: the walk from the root to mdev_bus is
 * not repeated for every candidate. Any ENOENT is asked again from the root,
 * which also covers a descriptor of an mdev_bus that is gone (the module
 * reloaded meanwhile) and gives the message. */
int sysfs_type_available_at(int rootfd, int busfd, const char *parent, const char *type, unsigned *ret) {
        char path[PATH_MAX], buf[64];
        int r;

        if (busfd < 0 || !name_is_valid(parent) || !name_is_valid(type))
                return sysfs_type_available(rootfd, parent, type, ret);
        if (available_path(parent, type, path, sizeof path) < 0)
                return -ENAMETOOLONG;
        r = read_small_at(busfd, path, buf, sizeof buf);
        if (r == -ENOENT)
                return sysfs_type_available(rootfd, parent, type, ret);
        if (r < 0)
                return error_set(r, "cannot read '/" MDEV_BUS "/%s': %s", path, strerror(-r));
        return available_parse(path, buf, ret);
}

void sysfs_devdirs_init(SysfsDevDirs *d) {
        *d = (SysfsDevDirs) { .n = 0 };
        (void) pthread_mutex_init(&d->lock, NULL);
}

void sysfs_devdirs_done(SysfsDevDirs *d) {
        for (size_t i = 0; i < d->n; i++) {
                close(d->fd[i]);
                free(d->path[i]);
        }
        d->n = 0;
        (void) pthread_mutex_destroy(&d->lock);
}

/* How many entries d has: each of them is complete, and stays as it is. */
static size_t devdirs_count(SysfsDevDirs *d) {
        size_t n;

        (void) pthread_mutex_lock(&d->lock);
        n = d->n;
        (void) pthread_mutex_unlock(&d->lock);
        return n;
}

/* "dddd:bb" of a PCI address: the bus, whose devices all sit in one
 * directory (below the bridge that leads to it). */
#define PCI_BUS_LEN 7

/* The entry of d for dir (a link's target up to the parent's name): found,
 * or opened and added, with the parent's bus. -errno when it cannot be
 * (-ENOSPC: d is full). */
static int devdirs_find_add(SysfsDevDirs *d, int busfd, const char *dir, const char *parent) {
        size_t n;
        int r, fd;

        (void) pthread_mutex_lock(&d->lock);
        n = d->n;
        for (size_t i = 0; i < n; i++)
                if (streq(d->path[i], dir)) {
                        r = (int) i;
                        goto out;
                }
        r = -ENOSPC;
        if (n == SYSFS_DEVDIRS_MAX)
                goto out;
        fd = openat(busfd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        d->path[n] = strdup(dir);
        r = -ENOMEM;
        if (!d->path[n]) {
                close(fd);
                goto out;
        }
        d->fd[n] = fd;
        memcpy(d->bus[n], parent, PCI_BUS_LEN);
        d->bus[n][PCI_BUS_LEN] = '\0';
        d->n = n + 1;
        r = (int) n;
out:
        (void) pthread_mutex_unlock(&d->lock);
        return r;
}

/* The entry of d for the directory that class/mdev_bus/<parent> points into
 * ("../../devices/.../<parent>"). */
static int devdirs_learn(SysfsDevDirs *d, int busfd, const char *parent) {
        static const char prefix[] = "../../devices/";
        char target[PATH_MAX];
        char *slash;
        ssize_t k;

        k = readlinkat(busfd, parent, target, sizeof target);
        if (k < 0)
                return -errno;
        if ((size_t) k >= sizeof target)
                return -ENAMETOOLONG;
        target[k] = '\0';
        slash = strrchr(target, '/');
        if (!slash || !streq(slash + 1, parent) || strncmp(target, prefix, strlen(prefix)) != 0 ||
            slash < target + strlen(prefix) || strstr(target + strlen(prefix), ".."))
                return -EBADMSG;
        *slash = '\0';
        return devdirs_find_add(d, busfd, target, parent);
}

/* The entry that held the last parent this thread read. */
static _Thread_local size_t devdirs_last = SIZE_MAX;

/* The entry most likely to hold parent, of the first n: the one learnt from
 * a parent on its bus, else the one that held the last parent this thread
 * read (the next bus in name order may sit in the same directory: VFs that
 * spill over to the bus after their PF's sit beside the PF); SIZE_MAX: none. */
static size_t devdirs_guess(const SysfsDevDirs *d, size_t n, const char *parent) {
        for (size_t i = 0; i < n; i++)
                if (memcmp(d->bus[i], parent, PCI_BUS_LEN) == 0)
                        return i;
        return devdirs_last < n ? devdirs_last : SIZE_MAX;
}

int sysfs_type_available_dirs(int rootfd, int busfd, SysfsDevDirs *d, const char *parent, const char *type,
                              unsigned *ret) {
        char path[PATH_MAX], buf[64];
        size_t guess;
        int k;

        if (!d || busfd < 0 || !pci_address_is_valid(parent) || !name_is_valid(type))
                return sysfs_type_available_at(rootfd, busfd, parent, type, ret);
        if (available_path(parent, type, path, sizeof path) < 0)
                return -ENAMETOOLONG;
        guess = devdirs_guess(d, devdirs_count(d), parent);
        if (guess != SIZE_MAX && read_small_at(d->fd[guess], path, buf, sizeof buf) >= 0) {
                devdirs_last = guess;
                return available_parse(path, buf, ret);
        }
        k = devdirs_learn(d, busfd, parent);
        if (k >= 0 && (size_t) k != guess && read_small_at(d->fd[k], path, buf, sizeof buf) >= 0) {
                devdirs_last = (size_t) k;
                return available_parse(path, buf, ret);
        }
        return sysfs_type_available_at(rootfd, busfd, parent, type, ret);
}

int sysfs_type_available_open(int busfd, const char *parent, const char *type, int *ret_fd) {
        char path[PATH_MAX];
        int fd;

        if (busfd < 0 || !name_is_valid(parent) || !name_is_valid(type))
                return -EINVAL;
        if (available_path(parent, type, path, sizeof path) < 0)
                return -ENAMETOOLONG;
        fd = openat(busfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

int sysfs_available_pread(int fd, unsigned *ret) {
        char buf[64];
        ssize_t n = pread(fd, buf, sizeof buf - 1, 0);

        if (n < 0)
                return -errno;
        if ((size_t) n == sizeof buf - 1)
                return -EFBIG;
        buf[n] = '\0';
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = '\0';
        return safe_atou(buf, ret) < 0 ? -EBADMSG : 0;
}

int sysfs_type_count(int rootfd, const char *parent, const char *type, unsigned *ret) {
        _cleanup_strv_free_ char **l = NULL;
        char path[PATH_MAX];
        unsigned n = 0;
        int r;

        r = type_path(parent, type, "devices", path, sizeof path);
        if (r == -EINVAL)
                return name_is_valid(parent) ? bad_name("type", type) : bad_name("parent", parent);
        if (r < 0)
                return r;
        r = dir_list_at(rootfd, path, &l);
        if (r == -ENOENT) {
                _cleanup_close_ int fd = -1;

                r = type_open(rootfd, parent, type, &fd);
                if (r < 0)
                        return r;
                return error_set(-ENOENT, "cannot list '/%s': %s", path, strerror(ENOENT));
        }
        if (r < 0)
                return error_set(r, "cannot list '/%s': %s", path, strerror(-r));
        /* The kernel puts only <uuid> links there. */
        for (char **p = l; *p; p++)
                if (uuid_is_valid(*p))
                        n++;
        *ret = n;
        return 0;
}

/* The last component of a link target, and the one before it. */
static int link_components(const char *target, const char **ret_last, const char **ret_before, size_t *ret_before_len) {
        const char *last, *before;
        size_t len = strlen(target);

        while (len > 0 && target[len - 1] == '/')
                len--;
        if (len == 0)
                return -EBADMSG;
        last = target + len;
        while (last > target && last[-1] != '/')
                last--;
        *ret_last = last;
        if (ret_before) {
                const char *end = last;

                while (end > target && end[-1] == '/')
                        end--;
                before = end;
                while (before > target && before[-1] != '/')
                        before--;
                if (before == end)
                        return -EBADMSG;
                *ret_before = before;
                *ret_before_len = (size_t) (end - before);
        }
        return 0;
}

/* readlinkat() into target, terminated: 0; -ENOENT without a message; or
 * -errno with one. */
static int link_read(int rootfd, const char *path, char target[PATH_MAX]) {
        ssize_t n;

        n = readlinkat(rootfd, path, target, PATH_MAX - 1);
        if (n < 0) {
                if (errno == ENOENT)
                        return -ENOENT;
                return error_set(-errno, "cannot read link '/%s': %s", path, strerror(errno));
        }
        target[n] = '\0';
        return 0;
}

/* The type an mdev_type link (target, read from path) points to. */
static int link_type(const char *path, const char *target, char type[NAME_STRING_MAX]) {
        const char *last;

        if (link_components(target, &last, NULL, NULL) < 0 || !name_is_valid(last) ||
            strlen(last) >= NAME_STRING_MAX)
                return error_set(-EBADMSG, "'/%s' points to '%s': invalid type name", path, target);
        strcpy(type, last);
        return 0;
}

bool sysfs_mdev_exists(int rootfd, const char *uuid) {
        char path[PATH_MAX];
        struct stat st;

        snprintf(path, sizeof path, MDEV_DEVICES "/%s", uuid);
        return fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0; /* errno kept */
}

int sysfs_mdev_get(int rootfd, const char *uuid, SysfsMdev *ret) {
        char path[PATH_MAX], target[PATH_MAX];
        const char *last, *before;
        size_t before_len;
        SysfsMdev m = { 0 };
        int r;

        if (!uuid_is_valid(uuid))
                return error_set(-EINVAL, "invalid mdev UUID '%s'", strna(uuid));
        uuid_normalize(uuid, m.uuid);

        /* sys/bus/mdev/devices/<uuid> -> ../../../devices/.../<parent>/<uuid> */
        snprintf(path, sizeof path, MDEV_DEVICES "/%s", m.uuid);
        r = link_read(rootfd, path, target);
        if (r < 0)
                return r;
        if (link_components(target, &last, &before, &before_len) < 0 ||
            !streq(last, m.uuid) || before_len >= sizeof m.parent)
                return error_set(-EBADMSG, "'/%s' points to '%s', not to <parent>/%s", path, target, m.uuid);
        memcpy(m.parent, before, before_len);
        m.parent[before_len] = '\0';
        if (!name_is_valid(m.parent))
                return error_set(-EBADMSG, "'/%s' points to '%s': invalid parent name", path, target);

        /* <uuid>/mdev_type -> ../mdev_supported_types/<type> */
        snprintf(path, sizeof path, MDEV_DEVICES "/%s/mdev_type", m.uuid);
        r = link_read(rootfd, path, target);
        if (r == -ENOENT) {
                /* Either the mdev went away between the two reads, or its type link is missing. */
                if (!sysfs_mdev_exists(rootfd, m.uuid) && errno == ENOENT)
                        return -ENOENT;
                return error_set(-EBADMSG, "'/" MDEV_DEVICES "/%s/mdev_type' is missing", m.uuid);
        }
        if (r < 0)
                return r;
        r = link_type(path, target, m.type);
        if (r < 0)
                return r;

        *ret = m;
        return 0;
}

int sysfs_mdev_type_on(int rootfd, const char *parent, const char *uuid, char type[NAME_STRING_MAX]) {
        char path[PATH_MAX], target[PATH_MAX];
        int r;

        if (!name_is_valid(parent) || !uuid_is_valid(uuid))
                return -EINVAL;
        /* class/mdev_bus/<parent> is the parent's device; the mdev is its child. */
        snprintf(path, sizeof path, MDEV_BUS "/%s/%s/mdev_type", parent, uuid);
        r = link_read(rootfd, path, target);
        if (r < 0)
                return r;
        return link_type(path, target, type);
}

static int cmp_mdev(const void *a, const void *b) {
        return strcmp(((const SysfsMdev *) a)->uuid, ((const SysfsMdev *) b)->uuid);
}

int sysfs_mdev_list(int rootfd, SysfsMdev **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ SysfsMdev *m = NULL;
        size_t n = 0;
        int r;

        r = dir_list_at(rootfd, MDEV_DEVICES, &l);
        if (r == -ENOENT) {
                /* No mdev bus: no mdevs. */
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (r < 0)
                return error_set(r, "cannot list '/" MDEV_DEVICES "': %s", strerror(-r));
        m = calloc(strv_length(l) + 1, sizeof *m);
        if (!m)
                return -ENOMEM;
        for (char **p = l; *p; p++) {
                if (!uuid_is_valid(*p))
                        continue;
                r = sysfs_mdev_get(rootfd, *p, &m[n]);
                if (r == -ENOENT)
                        continue; /* removed while we were reading */
                if (r < 0)
                        return r;
                n++;
        }
        qsort(m, n, sizeof *m, cmp_mdev);
        *ret = steal_pointer(&m);
        *ret_n = n;
        return 0;
}

int sysfs_mdev_create(int rootfd, const char *parent, const char *type, const char *uuid) {
        char path[PATH_MAX];
        int r;

        if (!uuid_is_valid(uuid))
                return -EINVAL;
        r = type_path(parent, type, "create", path, sizeof path);
        if (r < 0)
                return r;
        return write_string_at(rootfd, path, uuid);
}

int sysfs_mdev_remove(int rootfd, const char *uuid) {
        char path[PATH_MAX], u[UUID_STRING_MAX];

        if (!uuid_is_valid(uuid))
                return -EINVAL;
        uuid_normalize(uuid, u);
        snprintf(path, sizeof path, MDEV_DEVICES "/%s/remove", u);
        return write_string_at(rootfd, path, "1");
}
