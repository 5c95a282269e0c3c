/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The domain XML on the hook's stdin (see domxml.h).
 *
 * Split as kmod splits a large concept, behind domxml-internal.h:
 * domxml-sax.c parses with libxml2, hardened, and builds only the part of
 * the tree read here; this file reads that tree (the guest's mdevs, its
 * vGPUs and this project's metadata) and changes its UUIDs and addresses;
 * domxml-format.c writes the document out again.
 */
#include <stdint.h>
#include <strings.h>

#include "domxml-internal.h"
#include "pciaddr.h"

/* Far more than any guest has (NVIDIA allows 16 vGPUs in one VM), few
 * enough that the checks for duplicates, which compare every pair, stay
 * cheap on hostile input: 8 MiB hold some 80000 tiny hostdevs. */
#define MAX_MDEVS 256u
#define MAX_META_ENTRIES 1024u

/* --- reading the tree -------------------------------------------------- */

static size_t uuid_position(const ParseState *st, const xmlNode *n) {
        if (!n)
                return SIZE_MAX;
        for (size_t i = 0; i < st->n_pos; i++)
                if (st->pos[i].node == n)
                        return st->pos[i].pos;
        return SIZE_MAX;
}

static bool is_element(const xmlNode *n, const char *name) {
        return n->type == XML_ELEMENT_NODE && !n->ns && xmlStrEqual(n->name, BAD_CAST name);
}

static bool is_mh_element(const xmlNode *n, const char *name) {
        return n->type == XML_ELEMENT_NODE && n->ns && n->ns->href &&
               xmlStrEqual(n->ns->href, BAD_CAST DOMXML_NAMESPACE) &&
               xmlStrEqual(n->name, BAD_CAST name);
}

/* The value of an attribute without namespace (NULL if absent), as
 * libxml2 decoded it: character references resolved. */
static xmlChar *attr_get(const xmlNode *n, const char *name) {
        return xmlGetNoNsProp(n, BAD_CAST name);
}

/* A value from the input, made safe for a one-line message: at most 64
 * bytes, control characters shown as '?'. */
#define SHOW_MAX 68
static const char *show(const char *s, char buf[static SHOW_MAX]) {
        size_t i;

        for (i = 0; s && s[i] && i < SHOW_MAX - 4; i++)
                buf[i] = ((unsigned char) s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
        if (s && s[i])
                buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
        buf[i] = '\0';
        return buf;
}

static long node_line(const xmlNode *n) {
        return xmlGetLineNo(n);
}

static bool name_has_control(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return true;
        return false;
}

/* The text of a simple element such as <name>: its text and CDATA children. */
static int element_text(const xmlNode *n, char *buf, size_t size) {
        size_t len = 0;

        for (const xmlNode *c = n->children; c; c = c->next) {
                size_t l;

                if (c->type == XML_COMMENT_NODE || c->type == XML_PI_NODE)
                        continue;
                if (c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE)
                        return -EINVAL;
                l = strlen((const char *) c->content);
                if (len + l >= size)
                        return -E2BIG;
                memcpy(buf + len, c->content, l);
                len += l;
        }
        buf[len] = '\0';
        return 0;
}

/* The hostdev's <source><address>, NULL if it has none. */
static xmlNode *source_address(const xmlNode *hostdev) {
        for (xmlNode *s = hostdev->children; s; s = s->next)
                if (is_element(s, "source"))
                        for (xmlNode *a = s->children; a; a = a->next)
                                if (is_element(a, "address"))
                                        return a;
        return NULL;
}

static int add_mdev(Domxml *d, size_t *allocated, xmlNode *hostdev) {
        _cleanup_xmlfree_ xmlChar *uuid_attr = NULL;
        xmlNode *address = source_address(hostdev);
        const char *uuid;
        DomxmlMdev *m;

        if (!address)
                return error_set(-EINVAL, "domain XML line %ld: mdev hostdev without <source><address uuid='...'/>",
                                 node_line(hostdev));
        uuid_attr = attr_get(address, "uuid");
        uuid = (const char *) uuid_attr;
        if (!uuid)
                return error_set(-EINVAL, "domain XML line %ld: mdev hostdev without a source address uuid",
                                 node_line(address));
        if (!uuid_is_valid(uuid))
                return error_set(-EINVAL, "domain XML line %ld: mdev hostdev uuid '%s' is not a UUID",
                                 node_line(address), show(uuid, (char[SHOW_MAX]) { 0 }));

        if (d->n_mdevs >= MAX_MDEVS)
                return error_set(-EINVAL, "domain XML line %ld: more than %u mdev hostdevs, refusing it",
                                 node_line(hostdev), MAX_MDEVS);
        if (array_grow(&d->mdevs, d->n_mdevs, allocated, sizeof *d->mdevs) < 0)
                return -ENOMEM;
        m = &d->mdevs[d->n_mdevs];
        *m = (DomxmlMdev) { .address = address };
        uuid_normalize(uuid, m->uuid);
        for (size_t i = 0; i < d->n_mdevs; i++)
                if (streq(d->mdevs[i].uuid, m->uuid))
                        return error_set(-EINVAL, "domain XML line %ld: mdev %s is used by two hostdevs (also line %ld)",
                                         node_line(hostdev), m->uuid, node_line(d->mdevs[i].address));
        d->n_mdevs++;
        return 0;
}

/* One part of a PCI hostdev's source address (<address domain= bus= slot=
 * function=>) as libvirt reads it: hex with 0x, or decimal, at most max; a
 * missing domain is 0. -EINVAL when it is no such number. */
static int pci_part(const xmlNode *address, const char *name, unsigned long max, unsigned long *ret) {
        _cleanup_xmlfree_ xmlChar *v = attr_get(address, name);
        unsigned long x;
        char *end;

        if (!v) {
                if (streq(name, "domain")) {
                        *ret = 0;
                        return 0;
                }
                return -EINVAL;
        }
        errno = 0;
        x = strtoul((const char *) v, &end, 0);
        if (errno || end == (const char *) v || *end || x > max || v[0] == '-')
                return -EINVAL;
        *ret = x;
        return 0;
}

static int add_vgpu(Domxml *d, size_t *allocated, xmlNode *hostdev) {
        _cleanup_xmlfree_ xmlChar *managed = attr_get(hostdev, "managed");
        unsigned long dom, bus, slot, fn;
        xmlNode *address = source_address(hostdev);
        char pci[PCI_ADDRESS_STRING_MAX];
        DomxmlVgpu *v;

        if (!address)
                return 0; /* not a device by address (libvirt would refuse it): not ours */
        if (pci_part(address, "domain", 0xffff, &dom) < 0 || pci_part(address, "bus", 0xff, &bus) < 0 ||
            pci_part(address, "slot", 0x1f, &slot) < 0 || pci_part(address, "function", 7, &fn) < 0 ||
            pci_address_format(&(PciAddress) { .domain = dom, .bus = bus, .slot = slot, .function = fn }, pci) < 0)
                return error_set(-EINVAL, "domain XML line %ld: PCI hostdev source address is not a PCI address "
                                 "(domain, bus, slot, function)", node_line(address));
        if (d->n_vgpus >= MAX_MDEVS)
                return error_set(-EINVAL, "domain XML line %ld: more than %u PCI hostdevs, refusing it",
                                 node_line(hostdev), MAX_MDEVS);
        if (array_grow(&d->vgpus, d->n_vgpus, allocated, sizeof *d->vgpus) < 0)
                return -ENOMEM;
        v = &d->vgpus[d->n_vgpus];
        *v = (DomxmlVgpu) { .address = address, .managed = !streq_ptr((const char *) managed, "no") };
        snprintf(v->pci, sizeof v->pci, "%s", pci);
        memcpy(v->orig_pci, v->pci, sizeof v->pci);
        for (size_t i = 0; i < d->n_vgpus; i++)
                if (streq(d->vgpus[i].pci, v->pci))
                        return error_set(-EINVAL, "domain XML line %ld: PCI device %s is used by two hostdevs (also line %ld)",
                                         node_line(hostdev), v->pci, node_line(d->vgpus[i].address));
        d->n_vgpus++;
        return 0;
}

static int parse_devices(Domxml *d, xmlNode *devices, size_t *allocated, size_t *vgpus_allocated) {
        for (xmlNode *h = devices->children; h; h = h->next) {
                _cleanup_xmlfree_ xmlChar *mode = NULL, *type = NULL;
                int r;

                if (!is_element(h, "hostdev"))
                        continue;
                mode = attr_get(h, "mode");
                type = attr_get(h, "type");
                if (streq_ptr((char *) mode, "subsystem") && streq_ptr((char *) type, "pci")) {
                        r = add_vgpu(d, vgpus_allocated, h);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!streq_ptr((char *) mode, "subsystem") || !streq_ptr((char *) type, "mdev"))
                        continue;
                r = add_mdev(d, allocated, h);
                if (r < 0)
                        return r;
        }
        return 0;
}

typedef struct MetaEntry {
        xmlNode *node;
        char uuid[UUID_STRING_MAX]; /* <mh:mdev>: the UUID; <mh:vgpu>: the PCI address */
        bool vgpu;
} MetaEntry;

/* An optional u32 attribute of an <mh:vgpu> entry: 1 and *ret when there,
 * 0 when not, -EINVAL with a message when it is no u32. */
static int vgpu_attr_u32(const xmlNode *e, const char *name, unsigned *ret) {
        _cleanup_xmlfree_ xmlChar *v = attr_get(e, name);

        if (!v)
                return 0;
        if (safe_atou((const char *) v, ret) < 0 || strchr((const char *) v, '\n'))
                return error_set(-EINVAL, "domain XML line %ld: metadata <vgpu> %s '%s' is not a number from 0 to 4294967295",
                                 node_line(e), name, show((const char *) v, (char[SHOW_MAX]) { 0 }));
        return 1;
}

/* exec_quantum_ms= and preempt_timeout_us= of an <mh:vgpu> entry. */
static int vgpu_sched_parse(const xmlNode *e, DomxmlSched *ret) {
        DomxmlSched s = { .has_exec_quantum = false };
        int r;

        r = vgpu_attr_u32(e, "exec_quantum_ms", &s.exec_quantum_ms);
        if (r < 0)
                return r;
        s.has_exec_quantum = r > 0;
        r = vgpu_attr_u32(e, "preempt_timeout_us", &s.preempt_timeout_us);
        if (r < 0)
                return r;
        s.has_preempt_timeout = r > 0;
        if (ret)
                *ret = s;
        return 0;
}

/* <mh:vgpu pci= type= class= [exec_quantum_ms=] [preempt_timeout_us=]>. */
static int parse_vgpu_entry(xmlNode *e, MetaEntry *ret) {
        _cleanup_xmlfree_ xmlChar *pci = attr_get(e, "pci"), *type = attr_get(e, "type"), *cls = attr_get(e, "class");
        int r;

        if (!pci_address_is_valid((const char *) pci))
                return error_set(-EINVAL, "domain XML line %ld: metadata <vgpu> pci '%s' is not a PCI address such as 0000:41:00.4",
                                 node_line(e), show((const char *) pci, (char[SHOW_MAX]) { 0 }));
        if (type && !name_is_valid((const char *) type))
                return error_set(-EINVAL, "domain XML line %ld: metadata <vgpu> type '%s' is not a valid name "
                                 "(letters, digits and ._:+- only)", node_line(e), show((const char *) type, (char[SHOW_MAX]) { 0 }));
        if (cls && !mdev_class_is_valid((const char *) cls))
                return error_set(-EINVAL, "domain XML line %ld: metadata <vgpu> class '%s' is not VGPU or CUSTOM_[A-Z0-9_]+",
                                 node_line(e), show((const char *) cls, (char[SHOW_MAX]) { 0 }));
        r = vgpu_sched_parse(e, NULL);
        if (r < 0)
                return r;
        ret->node = e;
        ret->vgpu = true;
        pci_address_normalize((const char *) pci, ret->uuid); /* as sysfs names it: lower case */
        return 0;
}

static int parse_meta_entry(xmlNode *e, MetaEntry *ret) {
        static const char *const names[] = { "type", "parent" };
        _cleanup_xmlfree_ xmlChar *uuid_attr = NULL, *cls_attr = NULL;
        const char *uuid, *cls;

        uuid_attr = attr_get(e, "uuid");
        uuid = (const char *) uuid_attr;
        if (!uuid || !uuid_is_valid(uuid))
                return error_set(-EINVAL, "domain XML line %ld: metadata <mdev> uuid '%s' is not a UUID",
                                 node_line(e), show(uuid, (char[SHOW_MAX]) { 0 }));
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_xmlfree_ xmlChar *v = attr_get(e, names[i]);
                if (v && !name_is_valid((const char *) v))
                        return error_set(-EINVAL, "domain XML line %ld: metadata <mdev> %s '%s' is not a valid name "
                                         "(letters, digits and ._:+- only)", node_line(e), names[i],
                                         show((const char *) v, (char[SHOW_MAX]) { 0 }));
        }
        cls_attr = attr_get(e, "class");
        cls = (const char *) cls_attr;
        if (cls && !mdev_class_is_valid(cls))
                return error_set(-EINVAL, "domain XML line %ld: metadata <mdev> class '%s' is not VGPU or CUSTOM_[A-Z0-9_]+ of at most %d characters",
                                 node_line(e), show(cls, (char[SHOW_MAX]) { 0 }), MDEV_CLASS_MAX);
        ret->node = e;
        uuid_normalize(uuid, ret->uuid);
        return 0;
}

/* Every <mh:mdev> of every <mh:mdevs> under <metadata>; elements in other
 * namespaces (or none) are somebody else's and are not looked at. */
static int parse_metadata(Domxml *d, xmlNode *metadata, MetaEntry **entries, size_t *n, size_t *allocated) {
        for (xmlNode *l = metadata->children; l; l = l->next) {
                if (!is_mh_element(l, "mdevs"))
                        continue;
                for (xmlNode *e = l->children; e; e = e->next) {
                        int r;

                        if (!is_mh_element(e, "mdev") && !is_mh_element(e, "vgpu"))
                                continue;
                        if (*n >= MAX_META_ENTRIES)
                                return error_set(-EINVAL, "domain XML line %ld: more than %u metadata <mdev> entries, refusing it",
                                                 node_line(e), MAX_META_ENTRIES);
                        if (array_grow(entries, *n, allocated, sizeof **entries) < 0)
                                return -ENOMEM;
                        (*entries)[*n] = (MetaEntry) { 0 };
                        r = is_mh_element(e, "vgpu") ? parse_vgpu_entry(e, &(*entries)[*n])
                                                     : parse_meta_entry(e, &(*entries)[*n]);
                        if (r < 0)
                                return r;
                        for (size_t i = 0; i < *n; i++)
                                if (streq((*entries)[i].uuid, (*entries)[*n].uuid))
                                        return error_set(-EINVAL, "domain XML line %ld: two metadata <%s> entries for %s (also line %ld)",
                                                         node_line(e), (*entries)[*n].vgpu ? "vgpu" : "mdev",
                                                         (*entries)[*n].uuid, node_line((*entries)[i].node));
                        (*n)++;
                }
        }
        return 0;
}

static void copy_attr(const xmlNode *n, const char *name, char *buf, size_t size) {
        _cleanup_xmlfree_ xmlChar *v = attr_get(n, name);

        snprintf(buf, size, "%s", v ? (const char *) v : "");
}

/* <name> (required) and <uuid> (optional) into d. */
static int parse_identity(Domxml *d, xmlNode *name, xmlNode *uuid) {
        int r;

        if (!name)
                return error_set(-EINVAL, "domain XML: no <name>");
        r = element_text(name, d->name, sizeof d->name);
        if (r == -E2BIG)
                return error_set(-EINVAL, "domain XML line %ld: <name> is longer than %d bytes",
                                 node_line(name), GUEST_NAME_MAX - 1);
        if (r < 0 || d->name[0] == '\0' || name_has_control(d->name))
                return error_set(-EINVAL, "domain XML line %ld: <name> is empty or not plain text", node_line(name));

        if (uuid) {
                char buf[64];

                r = element_text(uuid, buf, sizeof buf);
                if (r < 0 || !uuid_is_valid(buf))
                        return error_set(-EINVAL, "domain XML line %ld: <uuid> is not a UUID", node_line(uuid));
                uuid_normalize(buf, d->uuid);
        }
        return 0;
}

/* <numatune><memory nodeset=>: the nodes the guest's memory is pinned to
 * (Domxml.numa_nodes). Never an error: a preference. */
static void parse_numatune(Domxml *d, const xmlNode *numatune) {
        for (const xmlNode *c = numatune->children; c; c = c->next) {
                _cleanup_xmlfree_ xmlChar *placement = NULL, *nodeset = NULL;

                if (!is_element(c, "memory"))
                        continue;
                placement = attr_get(c, "placement");
                nodeset = attr_get(c, "nodeset");
                d->numa_nodes = 0;
                if (nodeset && !(placement && xmlStrEqual(placement, BAD_CAST "auto")) &&
                    nodeset_parse((const char *) nodeset, &d->numa_nodes) < 0)
                        d->numa_nodes = 0;
        }
}

/* Gives each hostdev what its metadata entry says. */
static int apply_metadata(Domxml *d, const MetaEntry *entries, size_t n_entries) {
        for (size_t i = 0; i < n_entries; i++) {
                int k;
                DomxmlMdev *m;

                if (entries[i].vgpu) {
                        DomxmlVgpu *v;

                        k = domxml_find_vgpu(d, entries[i].uuid);
                        if (k < 0)
                                continue; /* an entry for a device this guest does not have */
                        v = &d->vgpus[k];
                        v->meta = entries[i].node;
                        v->has_meta = true;
                        copy_attr(v->meta, "type", v->type, sizeof v->type);
                        copy_attr(v->meta, "class", v->mdev_class, sizeof v->mdev_class);
                        (void) vgpu_sched_parse(v->meta, &v->sched); /* checked by parse_vgpu_entry() */
                        continue;
                }
                k = domxml_find_mdev(d, entries[i].uuid);
                if (k < 0) {
                        /* An entry for a device this guest does not have (it
                         * was hot-unplugged): ignored, but its UUID stays
                         * taken (domxml_set_mdev_uuid()). */
                        DomxmlPrivate *p = domxml_private(d);
                        char (*t)[UUID_STRING_MAX] = reallocarray(p->orphan_meta, p->n_orphan_meta + 1, sizeof *t);

                        if (!t)
                                return -ENOMEM;
                        p->orphan_meta = t;
                        memcpy(t[p->n_orphan_meta++], entries[i].uuid, UUID_STRING_MAX);
                        continue;
                }
                m = &d->mdevs[k];
                m->meta = entries[i].node;
                m->has_meta = true;
                copy_attr(m->meta, "type", m->type, sizeof m->type);
                copy_attr(m->meta, "class", m->mdev_class, sizeof m->mdev_class);
                copy_attr(m->meta, "parent", m->parent, sizeof m->parent);
        }
        return 0;
}

int parse_tree(Domxml *d) {
        _cleanup_free_ MetaEntry *entries = NULL;
        size_t n_entries = 0, entries_allocated = 0, mdevs_allocated = 0, vgpus_allocated = 0;
        xmlNode *root = xmlDocGetRootElement(d->doc), *name = NULL, *uuid = NULL;
        int r;

        if (!root || !is_element(root, "domain"))
                return error_set(-EINVAL, "domain XML: the root element is not <domain>");

        for (xmlNode *c = root->children; c; c = c->next) {
                if (c->type != XML_ELEMENT_NODE || c->ns)
                        continue;
                if (is_element(c, "name")) {
                        if (name)
                                return error_set(-EINVAL, "domain XML line %ld: a second <name>", node_line(c));
                        name = c;
                } else if (is_element(c, "uuid")) {
                        if (uuid)
                                return error_set(-EINVAL, "domain XML line %ld: a second <uuid>", node_line(c));
                        uuid = c;
                } else if (is_element(c, "devices")) {
                        r = parse_devices(d, c, &mdevs_allocated, &vgpus_allocated);
                        if (r < 0)
                                return r;
                } else if (is_element(c, "numatune")) {
                        parse_numatune(d, c);
                } else if (is_element(c, "metadata")) {
                        r = parse_metadata(d, c, &entries, &n_entries, &entries_allocated);
                        if (r < 0)
                                return r;
                }
        }

        r = parse_identity(d, name, uuid);
        if (r < 0)
                return r;
        return apply_metadata(d, entries, n_entries);
}

/* partial: the tree holds only what is read here (domxml_parse()); else
 * the whole document (domxml_parse_full()), whose uuid= positions are not
 * known, so that a rewrite of it goes through libxml2's writer. */
static int parse(const char *buf, size_t len, bool partial, Domxml **ret) {
        _cleanup_domxml_free_ Domxml *d = NULL;
        _cleanup_free_ UuidPos *pos = NULL;
        DomxmlPrivate *p;
        ParseState st;
        int r;

        if (len > DOMXML_MAX_SIZE)
                return error_set(-EFBIG, "domain XML is larger than %u bytes, refusing it", DOMXML_MAX_SIZE);
        if (len == 0)
                return error_set(-EBADMSG, "domain XML is empty");

        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        d = &p->pub;

        memset(&st, 0, sizeof st);
        r = parse_doc(buf, len, partial, &st, &d->doc);
        pos = st.pos;
        if (r < 0)
                return r;
        r = parse_tree(d);
        if (r < 0)
                return r;

        p->addr_pos = calloc(d->n_mdevs + 1, sizeof *p->addr_pos);
        p->meta_pos = calloc(d->n_mdevs + 1, sizeof *p->meta_pos);
        p->src_uuid = calloc(d->n_mdevs + 1, sizeof *p->src_uuid);
        if (!p->addr_pos || !p->meta_pos || !p->src_uuid)
                return -ENOMEM;
        /* Not copied (a migration's XML is a megabyte): the caller keeps it. */
        p->src = buf;
        p->src_len = len;
        for (size_t i = 0; i < d->n_mdevs; i++) {
                p->addr_pos[i] = uuid_position(&st, d->mdevs[i].address);
                p->meta_pos[i] = uuid_position(&st, d->mdevs[i].meta);
                memcpy(p->src_uuid[i], d->mdevs[i].uuid, UUID_STRING_MAX);
        }
        *ret = steal_pointer(&d);
        return 0;
}

int domxml_parse(const char *buf, size_t len, Domxml **ret) {
        return parse(buf, len, true, ret);
}

int domxml_parse_full(const char *buf, size_t len, Domxml **ret) {
        return parse(buf, len, false, ret);
}

void domxml_free(Domxml *d) {
        DomxmlPrivate *p;

        if (!d)
                return;
        p = domxml_private(d);
        if (d->doc)
                xmlFreeDoc(d->doc);
        free(d->mdevs);
        free(d->vgpus);
        free(p->addr_pos);
        free(p->meta_pos);
        free(p->src_uuid);
        free(p->orphan_meta);
        free(p);
}

int domxml_find_mdev(const Domxml *d, const char *uuid) {
        char u[UUID_STRING_MAX];

        if (!uuid_is_valid(uuid))
                return -ENOENT;
        uuid_normalize(uuid, u);
        for (size_t i = 0; i < d->n_mdevs; i++)
                if (streq(d->mdevs[i].uuid, u))
                        return (int) i;
        return -ENOENT;
}

int domxml_find_vgpu(const Domxml *d, const char *pci) {
        for (size_t i = 0; i < d->n_vgpus; i++)
                if (strcasecmp(d->vgpus[i].pci, pci) == 0)
                        return (int) i;
        return -ENOENT;
}

/* Sets the four source address attributes of a PCI hostdev, as libvirt
 * writes them. */
static int vgpu_address_set(xmlNode *address, const char *pci) {
        PciAddress a;
        char v[16];

        if (pci_address_split(pci, &a) < 0)
                return -EINVAL;
        snprintf(v, sizeof v, "0x%04x", a.domain);
        if (!xmlSetProp(address, BAD_CAST "domain", BAD_CAST v))
                return -ENOMEM;
        snprintf(v, sizeof v, "0x%02x", a.bus);
        if (!xmlSetProp(address, BAD_CAST "bus", BAD_CAST v))
                return -ENOMEM;
        snprintf(v, sizeof v, "0x%02x", a.slot);
        if (!xmlSetProp(address, BAD_CAST "slot", BAD_CAST v))
                return -ENOMEM;
        snprintf(v, sizeof v, "0x%x", a.function);
        if (!xmlSetProp(address, BAD_CAST "function", BAD_CAST v))
                return -ENOMEM;
        return 0;
}

int domxml_set_vgpu_pci(Domxml *d, size_t i, const char *pci) {
        DomxmlVgpu *v;
        int k, r;

        if (i >= d->n_vgpus)
                return -EINVAL;
        v = &d->vgpus[i];
        if (strcasecmp(v->pci, pci) == 0)
                return 0;
        k = domxml_find_vgpu(d, pci);
        if (k >= 0)
                return error_set(-EEXIST, "PCI device %s is already used by another hostdev of the guest", pci);
        r = vgpu_address_set(v->address, pci);
        if (r < 0)
                return r;
        if (v->meta && !xmlSetProp(v->meta, BAD_CAST "pci", BAD_CAST pci))
                return -ENOMEM;
        snprintf(v->pci, sizeof v->pci, "%s", pci);
        return 0;
}

bool domxml_has_orphan_meta(const Domxml *d, const char *uuid) {
        const DomxmlPrivate *p = domxml_private(d);
        char u[UUID_STRING_MAX];

        if (!uuid_is_valid(uuid))
                return false;
        uuid_normalize(uuid, u);
        for (size_t i = 0; i < p->n_orphan_meta; i++)
                if (streq(p->orphan_meta[i], u))
                        return true;
        return false;
}

int domxml_set_mdev_uuid(Domxml *d, size_t i, const char *uuid) {
        char u[UUID_STRING_MAX];
        DomxmlMdev *m;
        int k;

        if (i >= d->n_mdevs)
                return -EINVAL;
        if (!uuid_is_valid(uuid))
                return error_set(-EINVAL, "'%s' is not a UUID", show(uuid, (char[SHOW_MAX]) { 0 }));
        uuid_normalize(uuid, u);
        m = &d->mdevs[i];
        if (streq(m->uuid, u))
                return 0;
        k = domxml_find_mdev(d, u);
        if (k >= 0)
                return error_set(-EEXIST, "mdev %s is already used by another hostdev of the guest", u);
        /* The output would hold two metadata entries for it, which
         * domxml_parse() refuses. */
        if (domxml_has_orphan_meta(d, u))
                return error_set(-EEXIST, "mdev %s already has a metadata entry in the domain XML that no hostdev uses", u);

        if (!xmlSetProp(m->address, BAD_CAST "uuid", BAD_CAST u))
                return -ENOMEM;
        if (m->meta && !xmlSetProp(m->meta, BAD_CAST "uuid", BAD_CAST u))
                return -ENOMEM;
        memcpy(m->uuid, u, sizeof u);
        return 0;
}
