/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's mdev sysfs, read and written with openat() relative to the
 * root dirfd (util.h: root_open()), so that MDEV_HOOKS_ROOT reaches every
 * access. Layout (drivers/vfio/mdev/):
 *
 *   sys/class/mdev_bus/<parent>                      -> ../../devices/.../<parent>
 *   sys/class/mdev_bus/<parent>/mdev_supported_types/<type>/
 *       available_instances device_api [name] [description] create devices/
 *   sys/bus/mdev/devices/<uuid>                      -> ../../../devices/.../<parent>/<uuid>
 *   sys/bus/mdev/devices/<uuid>/mdev_type            -> ../mdev_supported_types/<type>
 *   sys/bus/mdev/devices/<uuid>/remove
 *
 * Reading one type of one parent reads only that type's files. Errors that
 * concern a file name it with error_set() (util.h).
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "util.h"

typedef struct SysfsType {
        char *id;          /* directory name, e.g. "nvidia-35" */
        char *name;        /* the optional "name" file, NULL when absent */
        char *description; /* the optional "description" file, NULL when absent */
        char *device_api;  /* e.g. "vfio-pci" */
        unsigned available; /* available_instances */
} SysfsType;

typedef struct SysfsMdev {
        char uuid[UUID_STRING_MAX];
        char parent[NAME_STRING_MAX];
        char type[NAME_STRING_MAX];
} SysfsMdev;

/* The libvirt node-device name of a registered parent (nodedev.h), from its
 * device's "subsystem" link; without that link (a test tree), from the
 * name's kind. A new string in *ret. */
int sysfs_parent_nodedev_name(int rootfd, const char *parent, char **ret);

/* Registered parents (entries of sys/class/mdev_bus), sorted. No mdev_bus
 * directory at all means no parents: an empty list, not an error. */
int sysfs_parent_list(int rootfd, char ***ret);
/* 1 if sys/class/mdev_bus/<parent> exists, 0 if not, <0 on error. */
int sysfs_parent_is_registered(int rootfd, const char *parent);
/* 1 if the parent's device exists although it is not (yet) an mdev parent
 * (sys/bus/pci/devices/<parent> for a PCI address), else 0. Used by prepare
 * to decide whether waiting (parent_wait) makes sense. */
int sysfs_parent_device_present(int rootfd, const char *parent);
/* The type ids a parent offers, sorted. -ENOENT if the parent is not registered. */
int sysfs_parent_types(int rootfd, const char *parent, char ***ret);

/* Reads the four files of one type. -ENOENT if the parent does not offer it. */
int sysfs_type_read(int rootfd, const char *parent, const char *type, SysfsType *ret);
void sysfs_type_done(SysfsType *t);
/* available_instances only. -ENOENT if the parent does not offer the type. */
int sysfs_type_available(int rootfd, const char *parent, const char *type, unsigned *ret);
/* The directory sys/class/mdev_bus (O_PATH), for sysfs_type_available_at():
 * -ENOENT when the mdev module is not loaded. Sets no message: a caller
 * that cannot open it reads from the root (sysfs_type_available_at(-1)). */
int sysfs_bus_open(int rootfd, int *ret_fd);
/* sysfs_type_available(), opened relative to busfd (from sysfs_bus_open(),
 * or -1: from the root); the same results and messages. */
int sysfs_type_available_at(int rootfd, int busfd, const char *parent, const char *type, unsigned *ret);

/* The directories of sys/devices that hold PCI parents, learnt from
 * class/mdev_bus's links while candidates are read. A parent's attribute is
 * then opened from the directory that holds it: a walk of the four names
 * <parent>/mdev_supported_types/<type>/available_instances, where the link
 * is followed through ../../devices and every directory down to the parent.
 * A PCI address names one device on the host, so the <parent> found in a
 * directory is the one the link points to. Shared by the threads that read
 * candidates: an entry is written once, under the lock, and n read under it
 * counts only entries that are complete. */
#define SYSFS_DEVDIRS_MAX 16
typedef struct SysfsDevDirs {
        pthread_mutex_t lock;
        size_t n;
        int fd[SYSFS_DEVDIRS_MAX];        /* O_PATH */
        char *path[SYSFS_DEVDIRS_MAX];    /* relative to class/mdev_bus: "../../devices/..." */
        char bus[SYSFS_DEVDIRS_MAX][8];   /* "dddd:bb" of the parent it was learnt from */
} SysfsDevDirs;
void sysfs_devdirs_init(SysfsDevDirs *d);
void sysfs_devdirs_done(SysfsDevDirs *d);
/* sysfs_type_available_at(), opened from the directory of d that holds the
 * parent: the one learnt from a parent on its bus, or else the one that held
 * the last parent this thread read; failing that, the one its link names
 * (learnt now; up to SYSFS_DEVDIRS_MAX). A parent that is not a PCI address,
 * or that neither holds, is read as sysfs_type_available_at() reads it, with
 * its results and messages; so is any read that fails. */
int sysfs_type_available_dirs(int rootfd, int busfd, SysfsDevDirs *d, const char *parent, const char *type,
                              unsigned *ret);
/* available_instances of parent's type, opened (O_RDONLY) from busfd
 * (sysfs_bus_open()) to be read later with sysfs_available_pread(). -errno,
 * and no message: it is only a head start (alloc_preopen()). */
int sysfs_type_available_open(int busfd, const char *parent, const char *type, int *ret_fd);
/* Reads a file opened so, from its start: kernfs shows the value anew for
 * every read from offset 0, as for a new open. -errno (-ENODEV: its parent
 * is gone), -EBADMSG when it holds no number; no message. */
int sysfs_available_pread(int fd, unsigned *ret);
/* How many mdevs of the type the parent holds (entries of the type's devices/). */
int sysfs_type_count(int rootfd, const char *parent, const char *type, unsigned *ret);

/* Every mdev on the host, sorted by UUID. */
int sysfs_mdev_list(int rootfd, SysfsMdev **ret, size_t *ret_n);
/* One mdev by UUID (lower case). -ENOENT if it does not exist. */
int sysfs_mdev_get(int rootfd, const char *uuid, SysfsMdev *ret);
/* Whether sys/bus/mdev/devices/<uuid> is there (one stat; no message;
 * when not, errno says why). */
bool sysfs_mdev_exists(int rootfd, const char *uuid);
/* The type of the mdev uuid under parent (class/mdev_bus/<parent>/<uuid>/
 * mdev_type): one link read that says both that the mdev exists on that
 * parent and its type. -ENOENT if it is not there. */
int sysfs_mdev_type_on(int rootfd, const char *parent, const char *uuid, char type[NAME_STRING_MAX]);

/* Writes the UUID to the type's "create". Returns the raw -errno of the write
 * (-EEXIST, -ENOSPC, -EUSERS, -EINVAL mean "try the next parent"). Does not
 * wait for or check the result: see sysfs_mdev_get(). Sets no message. */
int sysfs_mdev_create(int rootfd, const char *parent, const char *type, const char *uuid);
/* Writes "1" to the mdev's "remove". Raw -errno: -ENOENT gone, -EBUSY in use. */
int sysfs_mdev_remove(int rootfd, const char *uuid);
