/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The domain XML on the hook's stdin (see domxml.h).
 *
 * Parsing is hardened the way doc/design.md §4.5 asks: the size is checked before
 * libxml2 sees a byte, the parser runs without NOENT, DTDLOAD, DTDATTR or
 * XINCLUDE and with NONET, and a DOCTYPE stops the parser the moment it is
 * seen (a SAX internalSubset callback), so that no entity declaration -- the
 * billion laughs, an external entity -- is ever read, let alone expanded.
 * libxml2 prints nothing; the first error is kept and reported as one line
 * with its line and column.
 *
 * Speed (a migration XML of a megabyte is parsed, rewritten and written
 * on every migration; BENCHMARKS.md has the figures): libxml2 checks the
 * whole document, but the tree is built only for what is read here --
 * <name>, <uuid>, every <devices>/<hostdev>, and <metadata>/<mh:mdevs>/
 * <mh:mdev> -- through SAX callbacks that hand those elements to libxml2's
 * own tree builder (xmlSAX2*) and drop the rest.
 * A full tree of such a document is a great many small allocations, and
 * faulting that memory in costs more than the parse itself.
 *
 * Rewriting therefore does not serialise the tree: the output is the input,
 * byte for byte, with the 36 bytes of each rewritten uuid= value replaced.
 * libxml2 reports where each value lies in its input; the position is used
 * only after checking that the original bytes there are exactly that value
 * between quotes. When a value cannot be located that way (written with
 * character references, or an input in another encoding), domxml_format()
 * parses the document again into a full tree and serialises it with
 * libxml2 instead.
 */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <strings.h>
#include <sys/uio.h>

#include <libxml/SAX2.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlsave.h>

#include "domxml.h"
#include "pciaddr.h"

/* Far more than any guest has (NVIDIA allows 16 vGPUs in one VM), few
 * enough that the checks for duplicates, which compare every pair, stay
 * cheap on hostile input: 8 MiB hold some 80000 tiny hostdevs. */
#define MAX_MDEVS 256u
#define MAX_META_ENTRIES 1024u

#define PARSE_OPTIONS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING)

/* --- parsing ------------------------------------------------------------ */

/* What is known about a Domxml beyond the public struct. */
typedef struct DomxmlPrivate {
        Domxml pub;                  /* first: domxml_free() gets &pub */
        const char *src;             /* the caller's input, which outlives the Domxml */
        size_t src_len;
        size_t *addr_pos;            /* per mdev: offset of the address uuid= value in src, or SIZE_MAX */
        size_t *meta_pos;            /* per mdev: offset of the metadata uuid= value, or SIZE_MAX */
        char (*src_uuid)[UUID_STRING_MAX]; /* per mdev: the UUID as parsed */
        char (*orphan_meta)[UUID_STRING_MAX]; /* metadata entries that no hostdev uses */
        size_t n_orphan_meta;
} DomxmlPrivate;

static DomxmlPrivate *domxml_private(const Domxml *d) {
        return (DomxmlPrivate *) d;
}

/* Which elements the tree keeps (see the top of the file). */
typedef enum BuildMode {
        BUILD_SKIP,
        BUILD_ROOT,     /* <domain>: children filtered, text dropped */
        BUILD_DEVICES,  /* <devices>: only <hostdev> kept, text dropped */
        BUILD_METADATA, /* <metadata>: only <mh:mdevs> kept, text dropped */
        BUILD_MDEVS,    /* <mh:mdevs>: only <mh:mdev> kept, text dropped */
        BUILD_KEEP,     /* everything inside, text too */
} BuildMode;

/* libxml2 refuses nesting deeper than 256 without XML_PARSE_HUGE. */
#define BUILD_MAX_DEPTH 512

typedef struct UuidPos {
        const xmlNode *node;
        size_t pos;                  /* offset of the uuid= value in the input, SIZE_MAX if unknown */
} UuidPos;

typedef struct ParseState {
        bool doctype;
        bool have_error;
        int line, column;
        char message[256];

        bool partial;                /* build only what is read here */
        const char *src;
        size_t src_len;
        unsigned depth;              /* built elements open */
        unsigned skip;               /* > 0: inside a dropped element, its nesting */
        unsigned char mode[BUILD_MAX_DEPTH + 1];
        UuidPos *pos;
        size_t n_pos, allocated_pos;
        bool oom;
} ParseState;

/* libxml2 2.12 made the structured error handler's error const
 * (xmlStructuredErrorFunc); Debian 12 and 13 have 2.9.14. */
#if LIBXML_VERSION >= 21200
typedef const xmlError *ParseErrorPtr;
#else
typedef xmlError *ParseErrorPtr;
#endif

static void parse_structured_error(void *userdata, ParseErrorPtr e) {
        xmlParserCtxt *ctxt = userdata;
        ParseState *st = ctxt->_private;
        size_t n;

        if (!st || st->have_error || !e || e->level < XML_ERR_ERROR)
                return;
        st->have_error = true;
        st->line = e->line;
        st->column = e->int2;
        snprintf(st->message, sizeof st->message, "%s", e->message ? e->message : "unknown error");
        /* libxml2's messages end in a newline; keep the report on one line. */
        for (n = strlen(st->message); n > 0 && isspace((unsigned char) st->message[n - 1]); n--)
                st->message[n - 1] = '\0';
        for (char *p = st->message; *p; p++)
                if (*p == '\n' || *p == '\r' || *p == '\t')
                        *p = ' ';
}

/* <!DOCTYPE ...>: stop before the internal subset is read. */
static void parse_internal_subset(void *userdata, const xmlChar *name, const xmlChar *external_id,
                                  const xmlChar *system_id) {
        xmlParserCtxt *ctxt = userdata;
        ParseState *st = ctxt->_private;

        st->doctype = true;
        xmlStopParser(ctxt);
}

static BuildMode build_mode(BuildMode parent, const xmlChar *localname, const xmlChar *uri) {
        bool plain = !uri, ours = uri && xmlStrEqual(uri, BAD_CAST DOMXML_NAMESPACE);

        switch (parent) {
        case BUILD_SKIP:
                return BUILD_ROOT; /* the root element, whatever it is */
        case BUILD_ROOT:
                if (plain && (xmlStrEqual(localname, BAD_CAST "name") || xmlStrEqual(localname, BAD_CAST "uuid")))
                        return BUILD_KEEP;
                if (plain && xmlStrEqual(localname, BAD_CAST "devices"))
                        return BUILD_DEVICES;
                if (plain && xmlStrEqual(localname, BAD_CAST "metadata"))
                        return BUILD_METADATA;
                return BUILD_SKIP;
        case BUILD_DEVICES:
                return plain && xmlStrEqual(localname, BAD_CAST "hostdev") ? BUILD_KEEP : BUILD_SKIP;
        case BUILD_METADATA:
                return ours && xmlStrEqual(localname, BAD_CAST "mdevs") ? BUILD_MDEVS : BUILD_SKIP;
        case BUILD_MDEVS:
                return ours && (xmlStrEqual(localname, BAD_CAST "mdev") || xmlStrEqual(localname, BAD_CAST "vgpu"))
                               ? BUILD_KEEP : BUILD_SKIP;
        case BUILD_KEEP:
        default:
                return BUILD_KEEP;
        }
}

/* Where libxml2 found an attribute value, as an offset into the caller's
 * buffer, checked against the bytes there; SIZE_MAX if it cannot be told. */
static size_t value_position(xmlParserCtxt *ctxt, const ParseState *st, const xmlChar *value, const xmlChar *end) {
        xmlParserInput *in = ctxt->input;
        size_t len = (size_t) (end - value), pos;
        char q;

        if (!in || !in->base || value < in->base || end > in->end || end < value)
                return SIZE_MAX; /* a decoded copy, not the input itself */
        if (in->buf && in->buf->encoder)
                return SIZE_MAX; /* converted from another encoding */
        pos = (size_t) in->consumed + (size_t) (value - in->base);
        if (pos == 0 || pos + len >= st->src_len || memcmp(st->src + pos, value, len) != 0)
                return SIZE_MAX;
        q = st->src[pos - 1];
        if ((q != '"' && q != '\'') || st->src[pos + len] != q)
                return SIZE_MAX;
        return pos;
}

static void sax_start_element(void *userdata, const xmlChar *localname, const xmlChar *prefix,
                              const xmlChar *uri, int nb_namespaces, const xmlChar **namespaces,
                              int nb_attributes, int nb_defaulted, const xmlChar **attributes) {
        xmlParserCtxt *ctxt = userdata;
        ParseState *st = ctxt->_private;
        BuildMode mode;

        if (st->skip > 0) {
                st->skip++;
                return;
        }
        mode = build_mode(st->depth == 0 ? BUILD_SKIP : (BuildMode) st->mode[st->depth], localname, uri);
        if (mode == BUILD_SKIP || st->depth >= BUILD_MAX_DEPTH) {
                st->skip = 1;
                return;
        }
        xmlSAX2StartElementNs(ctxt, localname, prefix, uri, nb_namespaces, namespaces,
                              nb_attributes, nb_defaulted, attributes);
        st->mode[++st->depth] = (unsigned char) mode;

        if (mode != BUILD_KEEP || !ctxt->node)
                return;
        for (int i = 0; i < nb_attributes; i++) {
                const xmlChar **a = attributes + 5 * i;

                if (a[2] || !xmlStrEqual(a[0], BAD_CAST "uuid"))
                        continue;
                if (array_grow(&st->pos, st->n_pos, &st->allocated_pos, sizeof *st->pos) < 0) {
                        st->oom = true;
                        xmlStopParser(ctxt);
                        return;
                }
                st->pos[st->n_pos++] = (UuidPos) {
                        .node = ctxt->node,
                        .pos = value_position(ctxt, st, a[3], a[4]),
                };
        }
}

static void sax_end_element(void *userdata, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri) {
        xmlParserCtxt *ctxt = userdata;
        ParseState *st = ctxt->_private;

        if (st->skip > 0) {
                st->skip--;
                return;
        }
        xmlSAX2EndElementNs(ctxt, localname, prefix, uri);
        if (st->depth > 0)
                st->depth--;
}

/* Text, comments and the like only inside kept elements such as <name> and
 * <hostdev>: the whitespace between thousands of dropped devices is not
 * worth a node each. */
static bool sax_keeps_content(const ParseState *st) {
        return st->skip == 0 && st->depth > 0 && st->mode[st->depth] == BUILD_KEEP;
}

static void sax_characters(void *userdata, const xmlChar *ch, int len) {
        xmlParserCtxt *ctxt = userdata;

        if (sax_keeps_content(ctxt->_private))
                xmlSAX2Characters(ctxt, ch, len);
}

static void sax_cdata(void *userdata, const xmlChar *value, int len) {
        xmlParserCtxt *ctxt = userdata;

        if (sax_keeps_content(ctxt->_private))
                xmlSAX2CDataBlock(ctxt, value, len);
}

static void sax_comment(void *userdata, const xmlChar *value) {
        xmlParserCtxt *ctxt = userdata;

        if (sax_keeps_content(ctxt->_private))
                xmlSAX2Comment(ctxt, value);
}

static void sax_pi(void *userdata, const xmlChar *target, const xmlChar *data) {
        xmlParserCtxt *ctxt = userdata;

        if (sax_keeps_content(ctxt->_private))
                xmlSAX2ProcessingInstruction(ctxt, target, data);
}

static void sax_reference(void *userdata, const xmlChar *name) {
        xmlParserCtxt *ctxt = userdata;

        if (sax_keeps_content(ctxt->_private))
                xmlSAX2Reference(ctxt, name);
}

/* libxml2 reads the caller's buffer through these, a few KiB at a time,
 * rather than from a copy of the whole document (xmlCtxtReadMemory makes
 * one): a megabyte of XML is then not copied and faulted in a second time. */
typedef struct MemReader {
        const char *buf;
        size_t len, off;
} MemReader;

static int mem_read(void *userdata, char *out, int len) {
        MemReader *m = userdata;
        size_t n = m->len - m->off < (size_t) len ? m->len - m->off : (size_t) len;

        memcpy(out, m->buf + m->off, n);
        m->off += n;
        return (int) n;
}

static int mem_close(void *userdata) {
        return 0;
}

/* Parses buf with the hardening above; partial: build only what is read
 * here and note where uuid= values lie. */
static int parse_doc(const char *buf, size_t len, bool partial, ParseState *st, xmlDoc **ret) {
        _cleanup_xmlparserctxt_free_ xmlParserCtxt *ctxt = NULL;
        _cleanup_xmldoc_free_ xmlDoc *doc = NULL;

        ctxt = xmlNewParserCtxt();
        if (!ctxt)
                return -ENOMEM;
        st->partial = partial;
        st->src = buf;
        st->src_len = len;
        ctxt->_private = st;
        ctxt->sax->internalSubset = parse_internal_subset;
        ctxt->sax->serror = parse_structured_error;
        if (partial) {
                ctxt->sax->startElementNs = sax_start_element;
                ctxt->sax->endElementNs = sax_end_element;
                ctxt->sax->characters = sax_characters;
                ctxt->sax->ignorableWhitespace = sax_characters;
                ctxt->sax->cdataBlock = sax_cdata;
                ctxt->sax->comment = sax_comment;
                ctxt->sax->processingInstruction = sax_pi;
                ctxt->sax->reference = sax_reference;
        }
        doc = xmlCtxtReadIO(ctxt, mem_read, mem_close, &(MemReader) { .buf = buf, .len = len },
                            "domain.xml", NULL, PARSE_OPTIONS);

        if (st->oom)
                return -ENOMEM;
        if (st->doctype || (doc && (doc->intSubset || doc->extSubset)))
                return error_set(-EINVAL, "domain XML has a <!DOCTYPE>, which libvirt never sends; refusing it "
                                 "(no DTDs or entity declarations are accepted)");
        if (st->have_error || !doc) {
                if (!st->have_error)
                        return error_set(-EBADMSG, "malformed domain XML");
                return error_set(-EBADMSG, "malformed domain XML at line %d, column %d: %s",
                                 st->line, st->column, st->message);
        }
        *ret = steal_pointer(&doc);
        return 0;
}

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
        DomxmlVgpu *v;

        if (!address)
                return 0; /* not a device by address (libvirt would refuse it): not ours */
        if (pci_part(address, "domain", 0xffff, &dom) < 0 || pci_part(address, "bus", 0xff, &bus) < 0 ||
            pci_part(address, "slot", 0x1f, &slot) < 0 || pci_part(address, "function", 7, &fn) < 0)
                return error_set(-EINVAL, "domain XML line %ld: PCI hostdev source address is not a PCI address "
                                 "(domain, bus, slot, function)", node_line(address));
        if (d->n_vgpus >= MAX_MDEVS)
                return error_set(-EINVAL, "domain XML line %ld: more than %u PCI hostdevs, refusing it",
                                 node_line(hostdev), MAX_MDEVS);
        if (array_grow(&d->vgpus, d->n_vgpus, allocated, sizeof *d->vgpus) < 0)
                return -ENOMEM;
        v = &d->vgpus[d->n_vgpus];
        *v = (DomxmlVgpu) { .address = address, .managed = !streq_ptr((const char *) managed, "no") };
        snprintf(v->pci, sizeof v->pci, "%04lx:%02lx:%02lx.%lx", dom, bus, slot, fn);
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

/* <mh:vgpu pci= type= class=>. */
static int parse_vgpu_entry(xmlNode *e, MetaEntry *ret) {
        _cleanup_xmlfree_ xmlChar *pci = attr_get(e, "pci"), *type = attr_get(e, "type"), *cls = attr_get(e, "class");

        if (!pci_address_is_valid((const char *) pci))
                return error_set(-EINVAL, "domain XML line %ld: metadata <vgpu> pci '%s' is not a PCI address such as 0000:41:00.4",
                                 node_line(e), show((const char *) pci, (char[SHOW_MAX]) { 0 }));
        if (type && !name_is_valid((const char *) type))
                return error_set(-EINVAL, "domain XML line %ld: metadata <vgpu> type '%s' is not a valid name "
                                 "(letters, digits and ._:+- only)", node_line(e), show((const char *) type, (char[SHOW_MAX]) { 0 }));
        if (cls && !mdev_class_is_valid((const char *) cls))
                return error_set(-EINVAL, "domain XML line %ld: metadata <vgpu> class '%s' is not VGPU or CUSTOM_[A-Z0-9_]+",
                                 node_line(e), show((const char *) cls, (char[SHOW_MAX]) { 0 }));
        ret->node = e;
        ret->vgpu = true;
        for (size_t i = 0; pci[i]; i++) /* as sysfs names it: lower case */
                ret->uuid[i] = (char) tolower(pci[i]);
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

static int parse_tree(Domxml *d) {
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
        unsigned dom, bus, slot, fn;
        char v[16];

        if (sscanf(pci, "%4x:%2x:%2x.%1x", &dom, &bus, &slot, &fn) != 4)
                return -EINVAL;
        snprintf(v, sizeof v, "0x%04x", dom);
        if (!xmlSetProp(address, BAD_CAST "domain", BAD_CAST v))
                return -ENOMEM;
        snprintf(v, sizeof v, "0x%02x", bus);
        if (!xmlSetProp(address, BAD_CAST "bus", BAD_CAST v))
                return -ENOMEM;
        snprintf(v, sizeof v, "0x%02x", slot);
        if (!xmlSetProp(address, BAD_CAST "slot", BAD_CAST v))
                return -ENOMEM;
        snprintf(v, sizeof v, "0x%x", fn);
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

/* The input with the rewritten values put in place, as the pieces of the
 * input between them and the new values: at most 2 * 2 * n_mdevs + 1, in
 * order. -ENOENT if a value that changed could not be located. */
static int splice_pieces(const DomxmlPrivate *p, struct iovec **ret, size_t *ret_n) {
        const Domxml *d = &p->pub;
        _cleanup_free_ struct iovec *iov = NULL;
        _cleanup_free_ size_t *at = NULL;
        _cleanup_free_ const char **with = NULL;
        size_t n_at = 0, n = 0, o = 0;

        for (size_t i = 0; i < d->n_vgpus; i++)
                if (!streq(d->vgpus[i].pci, d->vgpus[i].orig_pci))
                        return -ENOENT; /* four attributes of different lengths: libxml2 writes it */
        for (size_t i = 0; i < d->n_mdevs; i++)
                if (!streq(d->mdevs[i].uuid, p->src_uuid[i]) &&
                    (p->addr_pos[i] == SIZE_MAX || (d->mdevs[i].meta && p->meta_pos[i] == SIZE_MAX)))
                        return -ENOENT;
        at = calloc(2 * d->n_mdevs + 1, sizeof *at);
        with = calloc(2 * d->n_mdevs + 1, sizeof *with);
        iov = calloc(4 * d->n_mdevs + 1, sizeof *iov);
        if (!at || !with || !iov)
                return -ENOMEM;
        for (size_t i = 0; i < d->n_mdevs; i++) {
                if (streq(d->mdevs[i].uuid, p->src_uuid[i]))
                        continue;
                at[n_at] = p->addr_pos[i];
                with[n_at++] = d->mdevs[i].uuid;
                if (d->mdevs[i].meta) {
                        at[n_at] = p->meta_pos[i];
                        with[n_at++] = d->mdevs[i].uuid;
                }
        }
        /* In document order (the metadata comes before the devices); few
         * enough for an insertion sort. Values never overlap: each is the
         * whole of a distinct attribute. */
        for (size_t i = 1; i < n_at; i++)
                for (size_t j = i; j > 0 && at[j - 1] > at[j]; j--) {
                        size_t t = at[j];
                        const char *w = with[j];
                        at[j] = at[j - 1];
                        with[j] = with[j - 1];
                        at[j - 1] = t;
                        with[j - 1] = w;
                }
        for (size_t k = 0; k < n_at; k++) {
                iov[n++] = (struct iovec) { .iov_base = (char *) p->src + o, .iov_len = at[k] - o };
                iov[n++] = (struct iovec) { .iov_base = (char *) with[k], .iov_len = UUID_STRING_MAX - 1 };
                o = at[k] + UUID_STRING_MAX - 1;
        }
        iov[n++] = (struct iovec) { .iov_base = (char *) p->src + o, .iov_len = p->src_len - o };
        *ret = steal_pointer(&iov);
        *ret_n = n;
        return 0;
}

static int format_splice(const DomxmlPrivate *p, char **ret_buf, size_t *ret_len) {
        _cleanup_free_ struct iovec *iov = NULL;
        size_t n, o = 0;
        char *s;
        int r;

        r = splice_pieces(p, &iov, &n);
        if (r < 0)
                return r;
        s = malloc(p->src_len + 1);
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                memcpy(s + o, iov[i].iov_base, iov[i].iov_len);
                o += iov[i].iov_len;
        }
        s[o] = '\0';
        *ret_buf = s;
        *ret_len = o;
        return 0;
}

static int format_tree(xmlDoc *doc, char **ret_buf, size_t *ret_len) {
        _cleanup_xmlbuffer_free_ xmlBuffer *xb = NULL;
        _cleanup_xmlsave_close_ xmlSaveCtxt *save = NULL;
        char *s;
        size_t len;

        xb = xmlBufferCreate();
        if (!xb)
                return -ENOMEM;
        /* No XML declaration: libvirt sends none, and the output is UTF-8,
         * XML's default, whatever the input declared. */
        save = xmlSaveToBuffer(xb, "UTF-8", XML_SAVE_NO_DECL);
        if (!save)
                return -ENOMEM;
        if (xmlSaveDoc(save, doc) < 0)
                return error_set(-EIO, "cannot serialise the domain XML");
        xmlSaveClose(steal_pointer(&save)); /* flushes into xb */

        len = (size_t) xmlBufferLength(xb);
        s = malloc(len + 1);
        if (!s)
                return -ENOMEM;
        memcpy(s, xmlBufferContent(xb), len);
        s[len] = '\0';
        *ret_buf = s;
        *ret_len = len;
        return 0;
}


/* The slow way: the whole document as a tree, the same UUIDs set, and
 * libxml2's serialiser. */
static int format_full(const DomxmlPrivate *p, char **ret_buf, size_t *ret_len) {
        _cleanup_domxml_free_ Domxml *full = NULL;
        DomxmlPrivate *fp;
        ParseState st;
        int r;

        fp = calloc(1, sizeof *fp);
        if (!fp)
                return -ENOMEM;
        full = &fp->pub;
        memset(&st, 0, sizeof st);
        r = parse_doc(p->src, p->src_len, false, &st, &full->doc);
        free(st.pos);
        if (r < 0)
                return r;
        r = parse_tree(full);
        if (r < 0)
                return r;
        if (full->n_mdevs != p->pub.n_mdevs || full->n_vgpus != p->pub.n_vgpus)
                return error_set(-EIO, "domain XML: the document changed between two parses");
        for (size_t i = 0; i < full->n_vgpus; i++) {
                if (streq(p->pub.vgpus[i].pci, full->vgpus[i].pci))
                        continue;
                r = domxml_set_vgpu_pci(full, i, p->pub.vgpus[i].pci);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < full->n_mdevs; i++) {
                if (streq(p->pub.mdevs[i].uuid, full->mdevs[i].uuid))
                        continue;
                if (!xmlSetProp(full->mdevs[i].address, BAD_CAST "uuid", BAD_CAST p->pub.mdevs[i].uuid))
                        return -ENOMEM;
                if (full->mdevs[i].meta &&
                    !xmlSetProp(full->mdevs[i].meta, BAD_CAST "uuid", BAD_CAST p->pub.mdevs[i].uuid))
                        return -ENOMEM;
        }
        return format_tree(full->doc, ret_buf, ret_len);
}

int domxml_format(const Domxml *d, char **ret_buf, size_t *ret_len) {
        const DomxmlPrivate *p = domxml_private(d);
        int r;

        r = format_splice(p, ret_buf, ret_len);
        if (r != -ENOENT)
                return r;
        return format_full(p, ret_buf, ret_len);
}

/* writev() until every piece is written. */
static int writev_all(int fd, struct iovec *iov, size_t n) {
        for (;;) {
                ssize_t k;

                while (n > 0 && iov->iov_len == 0) {
                        iov++;
                        n--;
                }
                if (n == 0)
                        return 0;
                k = writev(fd, iov, (int) (n > IOV_MAX ? IOV_MAX : n));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                while (n > 0 && (size_t) k >= iov->iov_len) {
                        k -= (ssize_t) iov->iov_len;
                        iov++;
                        n--;
                }
                if (n > 0) {
                        iov->iov_base = (char *) iov->iov_base + k;
                        iov->iov_len -= (size_t) k;
                }
        }
}

int domxml_write(const Domxml *d, int fd) {
        const DomxmlPrivate *p = domxml_private(d);
        _cleanup_free_ struct iovec *iov = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n, len;
        int r;

        /* The input's own bytes, with the new values between them: no copy
         * of the document. */
        r = splice_pieces(p, &iov, &n);
        if (r == -ENOENT) {
                r = format_full(p, &buf, &len);
                if (r < 0)
                        return r;
                iov = calloc(1, sizeof *iov);
                if (!iov)
                        return -ENOMEM;
                iov[0] = (struct iovec) { .iov_base = buf, .iov_len = len };
                n = 1;
        } else if (r < 0)
                return r;
        r = writev_all(fd, iov, n);
        if (r < 0)
                return error_set(r, "cannot write the rewritten domain XML: %s", strerror(-r));
        return 0;
}
