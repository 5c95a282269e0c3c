/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The domain XML that libvirt passes to the hook on stdin, read with libxml2
 * without network access, entity substitution or DTD loading, and with a
 * size limit. A document with a DOCTYPE is refused.
 *
 * What it extracts: the domain's name and UUID, and for each
 *   <devices><hostdev mode='subsystem' type='mdev'><source><address uuid=.../>
 * the UUID plus this project's metadata entry for it (doc/design.md §3):
 *   <metadata><mh:mdevs xmlns:mh="http://mdev-hooks.org/xmlns/domain/1.0">
 *     <mh:mdev uuid="..." type="..." class="..." parent="..."/>
 *
 * Rewriting (migrate/restore) changes only source/address/@uuid of one hostdev
 * and the uuid of its metadata entry; every other node stays as it was.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlsave.h>

#include "nodeset.h"
#include "util.h"

#define DOMXML_NAMESPACE "http://mdev-hooks.org/xmlns/domain/1.0"
/* Real domain XMLs are a few KiB; a migration XML with many devices well
 * under 1 MiB. Anything over this is refused before parsing. */
#define DOMXML_MAX_SIZE (8u * 1024u * 1024u)

typedef struct DomxmlMdev {
        char uuid[UUID_STRING_MAX];       /* source/address/@uuid, lower case */
        char type[NAME_STRING_MAX];       /* metadata type=, "" when absent */
        char mdev_class[MDEV_CLASS_MAX + 1]; /* metadata class=, "" when absent */
        char parent[NAME_STRING_MAX];     /* metadata parent=, "" when absent */
        xmlNode *address;                 /* the <address> element holding uuid= */
        xmlNode *meta;                    /* the <mh:mdev> element, or NULL */
        bool has_meta;                    /* a metadata entry names it */
} DomxmlMdev;

/* A PCI hostdev (<hostdev mode='subsystem' type='pci'>): perhaps a VF of
 * NVIDIA's vendor-specific VFIO framework carrying a vGPU (vfio.h), with its
 * metadata entry <mh:vgpu pci="0000:41:00.4" type="nvidia-1150"/> (or
 * class=) in the same <mh:mdevs>. Whether the device is such a VF is for
 * the caller to find out (sysfs); an ordinary passthrough device is one too. */
/* The scheduling profile an <mh:vgpu> entry may ask of its VF (Intel's
 * xe: sriov_admin/vfN/profile/): exec_quantum_ms=, preempt_timeout_us=,
 * each a u32 (0: unlimited), each optional. */
typedef struct DomxmlSched {
        bool has_exec_quantum, has_preempt_timeout;
        unsigned exec_quantum_ms, preempt_timeout_us;
} DomxmlSched;

typedef struct DomxmlVgpu {
        char pci[16];                     /* source address, "dddd:bb:ss.f" lower case */
        char orig_pci[16];                /* as parsed (domxml_set_vgpu_pci() changes pci) */
        char type[NAME_STRING_MAX];       /* metadata type=, "" when absent */
        char mdev_class[NAME_STRING_MAX]; /* metadata class=, "" when absent */
        bool managed;                     /* managed='yes' (libvirt's default) */
        xmlNode *address;                 /* <source><address domain= bus= slot= function=> */
        xmlNode *meta;                    /* the <mh:vgpu> element, or NULL */
        bool has_meta;                    /* a metadata entry names it */
        DomxmlSched sched;                /* what the entry asks of its scheduling */
} DomxmlVgpu;

typedef struct Domxml {
        /* Only what is read here: <name>, <uuid>, every <devices>/<hostdev>
         * and this project's metadata entries (the rest of the document is
         * checked by libxml2 but not kept). domxml_format() writes the whole
         * document. */
        xmlDoc *doc;
        char name[GUEST_NAME_MAX];
        char uuid[UUID_STRING_MAX];       /* "" when the XML has none */
        DomxmlMdev *mdevs;
        size_t n_mdevs;
        /* Every PCI hostdev (see DomxmlVgpu), in document order. */
        DomxmlVgpu *vgpus;
        size_t n_vgpus;
        /* The NUMA nodes its memory is pinned to: <numatune><memory
         * nodeset=> in any mode (strict, preferred, restrictive,
         * interleave: each keeps the memory on those nodes), which
         * placement prefers for its vGPUs (place.h). 0, no wish: no
         * <numatune>, placement='auto' (numad chooses, and libvirt ignores
         * a nodeset), no nodeset, or one that is not a node list (libvirt
         * refuses those; a preference never refuses a guest). Nodes from
         * NODESET_MAX on are left out (nodeset.h). */
        NodeSet numa_nodes;
} Domxml;

/* Index of the mdev hostdev with this UUID, or -ENOENT. */
int domxml_find_mdev(const Domxml *d, const char *uuid);
/* Index of the PCI hostdev with this source address, or -ENOENT. */
int domxml_find_vgpu(const Domxml *d, const char *pci);

/* Parses and validates; buf is not copied and must stay as it is until
 * domxml_free(). -EINVAL / -EBADMSG with a message for: malformed XML,
 * a DOCTYPE, a root that is not <domain>, a missing or overlong <name>, an
 * mdev hostdev without a valid UUID, two mdev hostdevs with one UUID, a
 * metadata entry whose uuid is not a UUID, whose type or parent is not a safe
 * name (util.h: name_is_valid) or whose class is not VGPU|CUSTOM_[A-Z0-9_]+,
 * two metadata entries for one UUID. Metadata entries for UUIDs that no
 * hostdev uses are ignored. */
int domxml_parse(const char *buf, size_t len, Domxml **ret);
/* As domxml_parse(), with the same hardening and checks, but the whole
 * document is kept as a tree (d->doc), for a caller that changes its
 * structure (attach.c adds and removes <hostdev>s) and serialises it with
 * libxml2. Slower: domxml_parse() keeps only what it reads.
 * domxml_format() and domxml_write() are not for such a Domxml. */
int domxml_parse_full(const char *buf, size_t len, Domxml **ret);
void domxml_free(Domxml *d);
static inline void domxml_freep(Domxml **d) {
        domxml_free(*d);
}
#define _cleanup_domxml_free_ _cleanup_(domxml_freep)

/* Whether one of this project's metadata entries names the UUID while no
 * hostdev uses it (left over from a hot-unplug). Such a UUID is taken: a
 * hostdev rewritten to it would give the document two entries for it. */
bool domxml_has_orphan_meta(const Domxml *d, const char *uuid);

/* Points hostdev i at another mdev: rewrites source/address/@uuid and, if
 * present, the uuid= of its metadata entry. -EEXIST when another hostdev
 * uses the UUID or a metadata entry names it (domxml_has_orphan_meta()):
 * the result must be a document domxml_parse() accepts. */
int domxml_set_mdev_uuid(Domxml *d, size_t i, const char *uuid);

/* Points PCI hostdev i at another device: rewrites its source address
 * (domain, bus, slot, function) and, if present, the pci= of its metadata
 * entry. The output is then serialised by libxml2 (domxml_format()). */
int domxml_set_vgpu_pci(Domxml *d, size_t i, const char *pci);

/* The document with the values domxml_set_mdev_uuid() changed: the input,
 * byte for byte, with those values replaced, or (when a value cannot be
 * located in the input: character references, another encoding) the whole
 * document serialised by libxml2. domxml_format() returns it in memory;
 * domxml_write() writes it to fd from the input's own bytes (migrate/
 * restore's stdout: no copy of a megabyte). */
int domxml_format(const Domxml *d, char **ret_buf, size_t *ret_len);
int domxml_write(const Domxml *d, int fd);

/* Cleanup attributes for the libxml2 objects (macro.h has the libc ones). */
DEFINE_POINTER_CLEANUP(xmlDoc, xmlFreeDoc)
DEFINE_POINTER_CLEANUP(xmlChar, xmlFree)
DEFINE_POINTER_CLEANUP(xmlParserCtxt, xmlFreeParserCtxt)
DEFINE_POINTER_CLEANUP(xmlBuffer, xmlBufferFree)
DEFINE_POINTER_CLEANUP(xmlSaveCtxt, xmlSaveClose)
#define _cleanup_xmldoc_free_ _cleanup_(xmlFreeDocp)
#define _cleanup_xmlfree_ _cleanup_(xmlFreep)
#define _cleanup_xmlparserctxt_free_ _cleanup_(xmlFreeParserCtxtp)
#define _cleanup_xmlbuffer_free_ _cleanup_(xmlBufferFreep)
#define _cleanup_xmlsave_close_ _cleanup_(xmlSaveClosep)
