/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parsing the domain XML with libxml2 (domxml-internal.h).
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
 * <name>, <uuid>, <numatune>, every <devices>/<hostdev>, and <metadata>/<mh:mdevs>/
 * <mh:mdev> -- through SAX callbacks that hand those elements to libxml2's
 * own tree builder (xmlSAX2*) and drop the rest.
 * A full tree of such a document is a great many small allocations, and
 * faulting that memory in costs more than the parse itself.
 */
#include <ctype.h>

#include <libxml/SAX2.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#include "domxml-internal.h"

#define PARSE_OPTIONS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING)

/* Which elements the tree keeps (see the top of the file). */
typedef enum BuildMode {
        BUILD_SKIP,
        BUILD_ROOT,     /* <domain>: children filtered, text dropped */
        BUILD_DEVICES,  /* <devices>: only <hostdev> kept, text dropped */
        BUILD_METADATA, /* <metadata>: only <mh:mdevs> kept, text dropped */
        BUILD_MDEVS,    /* <mh:mdevs>: only <mh:mdev> kept, text dropped */
        BUILD_KEEP,     /* everything inside, text too */
} BuildMode;

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
                if (plain && (xmlStrEqual(localname, BAD_CAST "name") || xmlStrEqual(localname, BAD_CAST "uuid") ||
                              xmlStrEqual(localname, BAD_CAST "numatune")))
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
int parse_doc(const char *buf, size_t len, bool partial, ParseState *st, xmlDoc **ret) {
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
