/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Giving a guest a vGPU, and taking it back: `mdev-hooks attach` and
 * `detach` (doc/design.md §3, "CLI, guests"). What is decided and what is
 * written in XML is here, without libvirt; the program that links libvirt
 * (helpers/cli-attach.c) asks libvirt for the guest's XML and metadata and
 * hands it what is made here.
 *
 * attach_choose() picks the devices through the backend table, read only,
 * and refuses in one line when the config does not enable the type or the
 * host has no room: an mdev gets a new random UUID, checked against the
 * room its type has (the hook's own reading); a VF kind's vGPU gets a VF
 * chosen as `mdev-hooks pick` chooses.
 *
 * attach_claim() and attach_release() are `--live`: under the host-wide
 * lock, the devices are claimed and created (or programmed) by the hook's
 * own prepare (hook_prepare(), on a domain holding only the new devices),
 * and freed by its release (hook_release_one()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "domxml.h"
#include "util.h"

typedef enum AttachKind {
        ATTACH_MDEV,   /* <hostdev type='mdev'>, <mh:mdev uuid=> */
        ATTACH_VGPU,   /* <hostdev type='pci'> on a VF, <mh:vgpu pci=> */
} AttachKind;

/* One device given to, or taken from, a guest. */
typedef struct AttachDevice {
        AttachKind kind;
        char key[UUID_STRING_MAX];           /* mdev: its UUID; vGPU: its VF, "dddd:bb:ss.f" */
        char type[NAME_STRING_MAX];          /* metadata type=, "" when class= */
        char mdev_class[MDEV_CLASS_MAX + 1]; /* metadata class=, "" when type= */
        char parent[NAME_STRING_MAX];        /* metadata parent= (mdevs), "" when not pinned */
        char what[MDEV_CLASS_MAX + 16];      /* for messages: the type (a vGPU: the one chosen) */
        bool managed;                        /* vGPU: a VF given whole, <hostdev managed='yes'> that
                                              * libvirt binds to vfio-pci (AMD's, Intel's) */
} AttachDevice;

typedef struct AttachRequest {
        const char *type;        /* TYPE, or NULL with mdev_class */
        const char *mdev_class;  /* --class, or NULL */
        const char *parent;      /* --parent: an mdev parent, or a VF or PF; NULL for any */
        unsigned count;          /* --count, >= 1 */
        /* VFs that other guests' definitions name (NULL-terminated, may be
         * NULL): never chosen, although no record holds them yet. */
        char **avoid;
} AttachRequest;

/* What a backend chooses attach's devices with (backend.h, attach_serves
 * and attach_choose). */
typedef struct AttachChoosing {
        int rootfd;
        int ledgerfd;            /* -1: no record yet */
        const Config *config;
        const char *guest;
        const char *boot_id;     /* "" when unknown */
        const Domxml *def, *live; /* the guest's XML; either may be NULL */
        const AttachRequest *req;
} AttachChoosing;

/* The NUMA nodes the guest's memory is pinned to (Domxml.numa_nodes): the
 * running guest's when it runs, else its definition's; 0: no wish. A VF
 * attach chooses is near them first, as the hook's choices (place.h). */
static inline NodeSet attach_wish(const AttachChoosing *ch) {
        return ch->live ? ch->live->numa_nodes : ch->def ? ch->def->numa_nodes : 0;
}

/* d as a device of kind with key, asked for by req; what: the type chosen,
 * for messages. */
void attach_device_fill(AttachDevice *d, AttachKind kind, const char *key, const AttachRequest *req, const char *what);

/* Chooses count devices for the guest (its XML: def, and live when it runs,
 * either may be NULL), read only: the first backend whose attach_serves()
 * says so chooses them (backend.h; none: the first backend says why it
 * cannot). -errno with a one-line reason that can
 * follow "mdev-hooks: <guest>: ", nothing changed. */
int attach_choose(int rootfd, const Config *c, const char *guest, const Domxml *def, const Domxml *live,
                  const AttachRequest *req, AttachDevice **ret, size_t *ret_n);

/* The <hostdev> of one device, as libvirt's device XML. */
int attach_hostdev_xml(const AttachDevice *d, char **ret);

/* This project's metadata element as libvirt's metadata API gives it
 * (virDomainGetMetadata(): <mdevs><mdev uuid=.../></mdevs>, without a
 * namespace; NULL or "" when the guest has none) with entries for the
 * devices added. *ret is the new element, for virDomainSetMetadata(). */
int attach_metadata_add(const char *element, const AttachDevice *d, size_t n, char **ret);
/* The same element without the entries for the devices. *ret is NULL when
 * no entry is left (the element is to be removed). */
int attach_metadata_remove(const char *element, const AttachDevice *d, size_t n, char **ret);

/* A guest's definition (the XML of virDomainGetXMLDesc(INACTIVE|SECURE))
 * with a <hostdev> per device added under <devices>, or with the devices'
 * <hostdev>s taken out: what virDomainDefineXML() is given. Everything
 * else stays as it was. */
int attach_define_add(const char *xml, const AttachDevice *d, size_t n, char **ret);
int attach_define_remove(const char *xml, const AttachDevice *d, size_t n, char **ret);

/* The guest's vGPUs that `detach` names: the mdev hostdev with UUID key,
 * the VF vGPU at PCI address key, or with key NULL every one of both (none:
 * 0 devices). Each with its metadata as the XML has it. -ENOENT (or
 * -EINVAL: a PCI device that is not a vGPU) with a one-line reason. */
int attach_find(int rootfd, const Domxml *dom, const char *key, AttachDevice **ret, size_t *ret_n);

/* --live: claims and creates (or programs) the devices for the guest under
 * the host-wide lock, as the hook's prepare does, all or nothing. -errno
 * with the reason; then nothing was left claimed. */
int attach_claim(int rootfd, const Config *c, const char *guest, const char *guest_uuid,
                 const AttachDevice *d, size_t n);
/* --live: frees the guest's devices under the host-wide lock, as the hook's
 * release frees each (records that name another guest, or no record, are
 * left alone). Every device is tried; the first failure is returned, with
 * its reason. */
int attach_release(int rootfd, const Config *c, const char *guest, const AttachDevice *d, size_t n);
