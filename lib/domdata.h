/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What is read from the domain XML (domxml.h has the whole story), without
 * libxml2's headers: two parsers fill these structs, domxml_parse() with
 * libxml2 (domxml.h) and domlite_parse() with libc alone (domlite.h), and
 * the code that only reads them needs neither.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

/* libxml2's node and document (libxml/tree.h names them so); only
 * domxml_parse() sets these pointers, domlite_parse() leaves them NULL. */
struct _xmlNode;
struct _xmlDoc;

#define DOMXML_NAMESPACE "http://mdev-hooks.org/xmlns/domain/1.0"
/* Real domain XMLs are a few KiB; a migration XML with many devices well
 * under 1 MiB. Anything over this is refused before parsing. */
#define DOMXML_MAX_SIZE (8u * 1024u * 1024u)

typedef struct DomxmlMdev {
        char uuid[UUID_STRING_MAX];       /* source/address/@uuid, lower case */
        char type[NAME_STRING_MAX];       /* metadata type=, "" when absent */
        char mdev_class[MDEV_CLASS_MAX + 1]; /* metadata class=, "" when absent */
        char parent[NAME_STRING_MAX];     /* metadata parent=, "" when absent */
        struct _xmlNode *address;         /* the <address> element holding uuid= */
        struct _xmlNode *meta;            /* the <mh:mdev> element, or NULL */
        bool has_meta;                    /* a metadata entry names it (meta, when parsed by domxml_parse()) */
} DomxmlMdev;

/* A PCI hostdev (<hostdev mode='subsystem' type='pci'>): perhaps a VF of
 * NVIDIA's vendor-specific VFIO framework carrying a vGPU (vfio.h), with its
 * metadata entry <mh:vgpu pci="0000:41:00.4" type="nvidia-1150"/> (or
 * class=) in the same <mh:mdevs>. Whether the device is such a VF is for
 * the caller to find out (sysfs); an ordinary passthrough device is one too. */
typedef struct DomxmlVgpu {
        char pci[16];                     /* source address, "dddd:bb:ss.f" lower case */
        char orig_pci[16];                /* as parsed (domxml_set_vgpu_pci() changes pci) */
        char type[NAME_STRING_MAX];       /* metadata type=, "" when absent */
        char mdev_class[NAME_STRING_MAX]; /* metadata class=, "" when absent */
        bool managed;                     /* managed='yes' (libvirt's default) */
        struct _xmlNode *address;         /* <source><address domain= bus= slot= function=> */
        struct _xmlNode *meta;            /* the <mh:vgpu> element, or NULL */
        bool has_meta;                    /* a metadata entry names it */
} DomxmlVgpu;

typedef struct Domxml {
        /* Only what is read here: <name>, <uuid>, every <devices>/<hostdev>
         * and this project's metadata entries (the rest of the document is
         * checked by libxml2 but not kept). domxml_format() writes the whole
         * document. */
        struct _xmlDoc *doc;
        char name[GUEST_NAME_MAX];
        char uuid[UUID_STRING_MAX];       /* "" when the XML has none */
        DomxmlMdev *mdevs;
        size_t n_mdevs;
        /* Every PCI hostdev (see DomxmlVgpu), in document order. */
        DomxmlVgpu *vgpus;
        size_t n_vgpus;
} Domxml;

/* Index of the mdev hostdev with this UUID, or -ENOENT. */
int domxml_find_mdev(const Domxml *d, const char *uuid);
/* Index of the PCI hostdev with this source address, or -ENOENT. */
int domxml_find_vgpu(const Domxml *d, const char *pci);

/* One part of a PCI hostdev's source address (<address domain= bus= slot=
 * function=>) as libvirt reads it: hex with 0x, or decimal, at most max.
 * v is the attribute's value, NULL when absent (domain then defaults to 0:
 * is_domain). -EINVAL when it is no such number. Both parsers use it. */
int domxml_pci_part(const char *v, bool is_domain, unsigned long max, unsigned long *ret);
