/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The strict, libc-only reader of the domain XML (domlite.h), and what both
 * parsers share (domdata.h).
 *
 * One pass over the document with a stack of open elements, each with its
 * role (the path domxml.c reads: <domain>/<name>, <uuid>, <devices>/
 * <hostdev>/<source>/<address>, <metadata>/<mh:mdevs>/<mh:mdev|vgpu>),
 * and the namespace bindings in scope. What it finds goes through the very
 * checks domxml.c makes (the same functions where they are shared); where
 * one of them fails it declines rather than refuse: domxml_parse() then
 * refuses with its own message. Every decline is one call of decline().
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "domlite.h"
#include "pciaddr.h"

/* domxml.c's limits: more and it refuses. */
#define MAX_MDEVS 256u
#define MAX_META_ENTRIES 1024u
/* Ours: more and we decline (libxml2 refuses nesting deeper than 256). */
#define LITE_MAX_DEPTH 128u
#define LITE_MAX_ATTRS 64u
#define LITE_NAME_MAX 1024u
/* A value read here longer than this fails every check it meets, except a
 * PCI address part with many leading zeros: declined. */
#define VALUE_MAX 512u

typedef enum Role {
        ROLE_OTHER,
        ROLE_ROOT,
        ROLE_NAME,
        ROLE_UUID,
        ROLE_DEVICES,
        ROLE_HOSTDEV,
        ROLE_SOURCE,
        ROLE_METADATA,
        ROLE_MDEVS,
} Role;

typedef struct Frame {
        const char *qname;
        size_t qlen;
        Role role;
        size_t n_ns;                 /* bindings in scope before this element's own */
} Frame;

typedef struct Binding {
        const char *prefix, *uri;
        size_t plen, ulen;
} Binding;

typedef struct Attr {
        const char *qname, *raw;     /* raw: the value between its quotes */
        size_t qlen, rawlen;
        size_t colon;                /* offset of ':' in qname, 0 if none */
} Attr;

/* An attribute's value as libxml2 gives it: references resolved, white
 * space normalised. */
typedef struct Value {
        bool present, too_long;
        char s[VALUE_MAX];
} Value;

typedef struct Hostdev {
        bool mdev, pci, managed_no, has_address;
        Value uuid, domain, bus, slot, function;
} Hostdev;

typedef struct Entry {
        char key[UUID_STRING_MAX];   /* <mh:mdev>: the UUID; <mh:vgpu>: the PCI address */
        bool vgpu;
        char type[NAME_STRING_MAX], cls[MDEV_CLASS_MAX + 1], parent[NAME_STRING_MAX];
} Entry;

typedef struct Lite {
        const char *buf, *p, *end;
        Frame stack[LITE_MAX_DEPTH + 1];
        unsigned depth;
        bool root_done, have_name, have_uuid;
        Binding *ns;
        size_t n_ns, ns_allocated;
        Attr attrs[LITE_MAX_ATTRS];
        size_t n_attrs;
        Hostdev hd;
        char name[GUEST_NAME_MAX], uuid[64];
        size_t name_len, uuid_len;
        Entry *entries;
        size_t n_entries, entries_allocated, mdevs_allocated, vgpus_allocated;
        Domxml *d;
} Lite;

static int decline(const Lite *l, const char *why) {
        return error_set(-EOPNOTSUPP, "domain XML not read without libxml2: %s (byte %zu)", why,
                         (size_t) (l->p - l->buf));
}

/* --- shared with domxml.c ------------------------------------------------ */

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

int domxml_pci_part(const char *v, bool is_domain, unsigned long max, unsigned long *ret) {
        unsigned long x;
        char *end;

        if (!v) {
                if (is_domain) {
                        *ret = 0;
                        return 0;
                }
                return -EINVAL;
        }
        errno = 0;
        x = strtoul(v, &end, 0);
        if (errno || end == v || *end || x > max || v[0] == '-')
                return -EINVAL;
        *ret = x;
        return 0;
}

/* --- characters, names, references --------------------------------------- */

/* The length of the UTF-8 sequence at s of an XML character (Char: tab, line
 * feed, U+0020-U+D7FF, U+E000-U+FFFD, U+10000-U+10FFFF; a carriage return
 * too, but we decline those), 0 if it is none. */
static size_t utf8_char(const unsigned char *s, const unsigned char *end) {
        unsigned char c = s[0];
        size_t n = (size_t) (end - s);

        if (c < 0x80)
                return c >= 0x20 || c == '\t' || c == '\n';
        if (c >= 0xc2 && c <= 0xdf)
                return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
        if (c >= 0xe0 && c <= 0xef) {
                if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
                        return 0;
                if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))
                        return 0; /* overlong, surrogate */
                if (c == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
                        return 0; /* U+FFFE, U+FFFF */
                return 3;
        }
        if (c >= 0xf0 && c <= 0xf4) {
                if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
                        return 0;
                if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
                        return 0;
                return 4;
        }
        return 0;
}

/* Whether any of the 8 bytes of w is >= 0x80 or < 0x20 (the usual
 * "has less than" test, exact for bytes below 0x80). */
static bool word_needs_look(uint64_t w) {
        const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;

        return (w & highs) || ((w - ones * 0x20) & ~w & highs);
}

#ifdef __SSE2__
/* A bit for each of the 16 bytes at s that needs a look: >= 0x80, or below
 * 0x20 and neither tab nor line feed. The word test above flags every line
 * feed and tab, which indented XML has on every line. */
static unsigned block_needs_look(const unsigned char *s) {
        __m128i v = _mm_loadu_si128((const __m128i *) (const void *) s);
        /* signed: the bytes >= 0x80 are below 0x20 too */
        __m128i low = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
        __m128i allowed = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));

        return (unsigned) _mm_movemask_epi8(_mm_andnot_si128(allowed, low));
}
#endif

static bool chars_valid(const char *buf, size_t len) {
        const unsigned char *s = (const unsigned char *) buf, *end = s + len;

        while (s < end) {
                size_t k;
                uint64_t w;

#ifdef __SSE2__
                /* Sixteen at a time, up to the first that needs a look. */
                if (end - s >= 16) {
                        unsigned m = block_needs_look(s);

                        if (m == 0) {
                                s += 16;
                                continue;
                        }
                        s += __builtin_ctz(m);
                }
#endif
                /* Eight plain ASCII characters at a time: most of a document. */
                if (end - s >= 8) {
                        memcpy(&w, s, sizeof w);
                        if (!word_needs_look(w)) {
                                s += 8;
                                continue;
                        }
                }
                if (*s >= 0x20 && *s < 0x80) {
                        s++;
                        continue;
                }
                k = utf8_char(s, end);
                if (k == 0)
                        return false;
                s += k;
        }
        return true;
}

/* What each ASCII byte is to the reader: one table lookup per byte. */
enum {
        C_SPACE = 1,      /* white space (S, without the declined CR) */
        C_NAME_START = 2, /* [A-Za-z_] */
        C_NAME = 4,       /* [A-Za-z0-9._-] */
        C_VALUE = 8,      /* stops a scan of an attribute value: & < tab line feed */
        C_TEXT = 16,      /* stops a scan of text: & ] */
        C_QUOT = 32,      /* " and ', which close an attribute value */
        C_APOS = 64,
        C_LT = 128,       /* <, which ends text */
};

static const unsigned char char_class[256] = {
        ['\t'] = C_SPACE | C_VALUE, ['\n'] = C_SPACE | C_VALUE, [' '] = C_SPACE,
        ['&'] = C_VALUE | C_TEXT, ['<'] = C_VALUE | C_LT, [']'] = C_TEXT, ['"'] = C_QUOT, ['\''] = C_APOS,
        ['.'] = C_NAME, ['-'] = C_NAME, ['_'] = C_NAME_START | C_NAME,
        ['0'] = C_NAME, ['1'] = C_NAME, ['2'] = C_NAME, ['3'] = C_NAME, ['4'] = C_NAME, ['5'] = C_NAME, ['6'] = C_NAME, ['7'] = C_NAME, ['8'] = C_NAME, ['9'] = C_NAME,
        ['a'] = C_NAME_START | C_NAME, ['b'] = C_NAME_START | C_NAME, ['c'] = C_NAME_START | C_NAME, ['d'] = C_NAME_START | C_NAME, ['e'] = C_NAME_START | C_NAME, ['f'] = C_NAME_START | C_NAME, ['g'] = C_NAME_START | C_NAME,
        ['h'] = C_NAME_START | C_NAME, ['i'] = C_NAME_START | C_NAME, ['j'] = C_NAME_START | C_NAME, ['k'] = C_NAME_START | C_NAME, ['l'] = C_NAME_START | C_NAME, ['m'] = C_NAME_START | C_NAME,
        ['n'] = C_NAME_START | C_NAME, ['o'] = C_NAME_START | C_NAME, ['p'] = C_NAME_START | C_NAME, ['q'] = C_NAME_START | C_NAME, ['r'] = C_NAME_START | C_NAME, ['s'] = C_NAME_START | C_NAME, ['t'] = C_NAME_START | C_NAME,
        ['u'] = C_NAME_START | C_NAME, ['v'] = C_NAME_START | C_NAME, ['w'] = C_NAME_START | C_NAME, ['x'] = C_NAME_START | C_NAME, ['y'] = C_NAME_START | C_NAME, ['z'] = C_NAME_START | C_NAME,
        ['A'] = C_NAME_START | C_NAME, ['B'] = C_NAME_START | C_NAME, ['C'] = C_NAME_START | C_NAME, ['D'] = C_NAME_START | C_NAME, ['E'] = C_NAME_START | C_NAME, ['F'] = C_NAME_START | C_NAME, ['G'] = C_NAME_START | C_NAME,
        ['H'] = C_NAME_START | C_NAME, ['I'] = C_NAME_START | C_NAME, ['J'] = C_NAME_START | C_NAME, ['K'] = C_NAME_START | C_NAME, ['L'] = C_NAME_START | C_NAME, ['M'] = C_NAME_START | C_NAME,
        ['N'] = C_NAME_START | C_NAME, ['O'] = C_NAME_START | C_NAME, ['P'] = C_NAME_START | C_NAME, ['Q'] = C_NAME_START | C_NAME, ['R'] = C_NAME_START | C_NAME, ['S'] = C_NAME_START | C_NAME, ['T'] = C_NAME_START | C_NAME,
        ['U'] = C_NAME_START | C_NAME, ['V'] = C_NAME_START | C_NAME, ['W'] = C_NAME_START | C_NAME, ['X'] = C_NAME_START | C_NAME, ['Y'] = C_NAME_START | C_NAME, ['Z'] = C_NAME_START | C_NAME,
};

static inline bool is_class(char c, unsigned cls) {
        return char_class[(unsigned char) c] & cls;
}

static inline bool is_space(char c) {
        return is_class(c, C_SPACE);
}

static inline bool is_name_start(char c) {
        return is_class(c, C_NAME_START);
}

static inline bool is_name_char(char c) {
        return is_class(c, C_NAME);
}

/* A QName of ASCII name characters at l->p: [A-Za-z_][A-Za-z0-9._-]* with
 * at most one ':' between two such names. */
static int parse_qname(Lite *l, const char **ret, size_t *ret_len, size_t *ret_colon) {
        const char *s = l->p, *end = l->end;
        size_t colon = 0;

        if (s >= end || !is_name_start(*s))
                return decline(l, "a name that is not plain ASCII");
        for (s++; s < end && is_name_char(*s); s++)
                ;
        /* a prefix: its ':', then the local name */
        if (s + 1 < end && *s == ':' && is_name_start(s[1])) {
                colon = (size_t) (s - l->p);
                for (s += 2; s < end && is_name_char(*s); s++)
                        ;
        }
        if ((size_t) (s - l->p) > LITE_NAME_MAX)
                return decline(l, "a name longer than we read");
        *ret = l->p;
        *ret_len = (size_t) (s - l->p);
        *ret_colon = colon;
        l->p = s;
        return 0;
}

static bool is_char_value(uint32_t c) {
        return c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c <= 0xd7ff) ||
               (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
}

/* The reference at s ('&'), one of the five predefined entities or a
 * character reference to an XML character: its code point, and its length
 * up to and with ';'. 0 if it is none of those. */
static size_t parse_ref(const char *s, const char *end, uint32_t *ret) {
        static const struct {
                const char *name;
                char c;
        } predefined[] = { { "lt;", '<' }, { "gt;", '>' }, { "amp;", '&' }, { "apos;", '\'' }, { "quot;", '"' } };
        const char *q = s + 1;
        uint32_t v = 0;
        bool hex;

        if (q < end && *q != '#') {
                for (size_t i = 0; i < ELEMENTSOF(predefined); i++) {
                        size_t n = strlen(predefined[i].name);
                        if ((size_t) (end - q) >= n && memcmp(q, predefined[i].name, n) == 0) {
                                *ret = (uint32_t) predefined[i].c;
                                return n + 1;
                        }
                }
                return 0;
        }
        q++;
        hex = q < end && *q == 'x';
        q += hex;
        if (q >= end || *q == ';')
                return 0;
        for (; q < end && *q != ';'; q++) {
                int digit = (*q >= '0' && *q <= '9') ? *q - '0'
                            : hex && (*q >= 'a' && *q <= 'f') ? *q - 'a' + 10
                            : hex && (*q >= 'A' && *q <= 'F') ? *q - 'A' + 10 : -1;
                if (digit < 0)
                        return 0;
                v = v * (hex ? 16 : 10) + (uint32_t) digit;
                if (v > 0x10ffff)
                        return 0;
        }
        if (q >= end || !is_char_value(v))
                return 0;
        *ret = v;
        return (size_t) (q - s) + 1;
}

static size_t utf8_put(uint32_t c, char out[static 4]) {
        if (c < 0x80) {
                out[0] = (char) c;
                return 1;
        }
        if (c < 0x800) {
                out[0] = (char) (0xc0 | (c >> 6));
                out[1] = (char) (0x80 | (c & 0x3f));
                return 2;
        }
        if (c < 0x10000) {
                out[0] = (char) (0xe0 | (c >> 12));
                out[1] = (char) (0x80 | ((c >> 6) & 0x3f));
                out[2] = (char) (0x80 | (c & 0x3f));
                return 3;
        }
        out[0] = (char) (0xf0 | (c >> 18));
        out[1] = (char) (0x80 | ((c >> 12) & 0x3f));
        out[2] = (char) (0x80 | ((c >> 6) & 0x3f));
        out[3] = (char) (0x80 | (c & 0x3f));
        return 4;
}

/* Checks the text or attribute value s..e and, when out is set, appends it
 * to out (*len bytes in use, size in all, NUL-terminated) as libxml2 hands
 * it over: references resolved, in a value tab and line feed as spaces.
 * -EOPNOTSUPP: something we decline ('<' in a value, "]]>" in text, another
 * reference); -E2BIG: out is too small. */
static int decode(const char *s, const char *e, bool value, char *out, size_t size, size_t *len) {
        unsigned stop = value ? C_VALUE : C_TEXT;

        /* Only checking: skip what needs no look. */
        while (!out && s < e && !is_class(*s, stop))
                s++;
        while (s < e) {
                char tmp[4];
                const char *piece = s;
                size_t n = 1;
                uint32_t c;

                if (*s == '&') {
                        n = parse_ref(s, e, &c);
                        if (n == 0)
                                return -EOPNOTSUPP;
                        s += n;
                        piece = tmp;
                        n = utf8_put(c, tmp);
                } else if (value && *s == '<')
                        return -EOPNOTSUPP;
                else if (!value && *s == ']' && e - s >= 3 && s[1] == ']' && s[2] == '>')
                        return -EOPNOTSUPP;
                else {
                        if (value && (*s == '\t' || *s == '\n'))
                                piece = " ";
                        s++;
                }
                if (!out)
                        continue;
                if (*len + n >= size)
                        return -E2BIG;
                memcpy(out + *len, piece, n);
                *len += n;
                out[*len] = '\0';
        }
        return 0;
}

/* --- namespaces ------------------------------------------------------------ */

static const Binding *ns_lookup(const Lite *l, const char *prefix, size_t plen) {
        for (size_t i = l->n_ns; i > 0; i--) {
                const Binding *b = &l->ns[i - 1];
                if (b->plen == plen && memcmp(b->prefix, prefix, plen) == 0)
                        return b;
        }
        return NULL;
}

static bool span_is(const char *s, size_t n, const char *what) {
        return strlen(what) == n && memcmp(s, what, n) == 0;
}

/* scheme://host[/path] of plain characters, which libxml2's URI parser
 * takes; not the two URIs XML reserves. */
static bool uri_is_plain(const char *s, size_t n) {
        size_t i = 0, host;

        if (span_is(s, n, "http://www.w3.org/XML/1998/namespace") || span_is(s, n, "http://www.w3.org/2000/xmlns/"))
                return false;
        if (n == 0 || !isalpha((unsigned char) s[0]))
                return false;
        while (i < n && (isalnum((unsigned char) s[i]) || s[i] == '+' || s[i] == '.' || s[i] == '-'))
                i++;
        if (n - i < 3 || memcmp(s + i, "://", 3) != 0)
                return false;
        for (i += 3, host = i; i < n && (isalnum((unsigned char) s[i]) || s[i] == '.' || s[i] == '-'); i++)
                ;
        if (i == host || (i < n && s[i] != '/'))
                return false;
        for (; i < n; i++)
                if (!isalnum((unsigned char) s[i]) && !strchr("._~/-", s[i]))
                        return false;
        return true;
}

/* The element's xmlns:p declarations join the scope; a prefix in use is
 * declined, as are xmlns= and the reserved prefixes. */
static int ns_declare(Lite *l) {
        for (size_t i = 0; i < l->n_attrs; i++) {
                const Attr *a = &l->attrs[i];
                const char *p = a->qname + a->colon + 1;
                size_t plen = a->qlen - a->colon - 1;

                if (span_is(a->qname, a->qlen, "xmlns"))
                        return decline(l, "a default namespace");
                if (a->colon == 0 || !span_is(a->qname, a->colon, "xmlns"))
                        continue;
                if (span_is(p, plen, "xml") || span_is(p, plen, "xmlns") || ns_lookup(l, p, plen))
                        return decline(l, "a namespace prefix bound again");
                if (!uri_is_plain(a->raw, a->rawlen))
                        return decline(l, "a namespace URI we do not read");
                if (array_grow(&l->ns, l->n_ns, &l->ns_allocated, sizeof *l->ns) < 0)
                        return -ENOMEM;
                l->ns[l->n_ns++] = (Binding) { .prefix = p, .plen = plen, .uri = a->raw, .ulen = a->rawlen };
        }
        return 0;
}

/* The element's own prefix resolved (*uri NULL: none), its attributes'
 * prefixes checked, no two attributes with one local name. */
static int ns_resolve(Lite *l, const char *qname, size_t colon, const Binding **uri) {
        *uri = NULL;
        if (colon > 0) {
                if (span_is(qname, colon, "xml") || span_is(qname, colon, "xmlns") ||
                    !(*uri = ns_lookup(l, qname, colon)))
                        return decline(l, "an element with a reserved or unbound prefix");
        }
        for (size_t i = 0; i < l->n_attrs; i++) {
                const Attr *a = &l->attrs[i];
                size_t off = a->colon ? a->colon + 1 : 0;

                if (a->colon && !span_is(a->qname, a->colon, "xmlns") &&
                    (span_is(a->qname, a->colon, "xml") || !ns_lookup(l, a->qname, a->colon)))
                        return decline(l, "an attribute with a reserved or unbound prefix");
                for (size_t j = 0; j < i; j++) {
                        const Attr *b = &l->attrs[j];
                        size_t boff = b->colon ? b->colon + 1 : 0;
                        if (a->qlen - off == b->qlen - boff && memcmp(a->qname + off, b->qname + boff, a->qlen - off) == 0)
                                return decline(l, "two attributes with one local name");
                }
        }
        return 0;
}

/* --- elements ---------------------------------------------------------------- */

/* The attribute without namespace called name, decoded into v. */
static int attr_value(Lite *l, const char *name, Value *v) {
        *v = (Value) { .present = false };
        for (size_t i = 0; i < l->n_attrs; i++) {
                const Attr *a = &l->attrs[i];
                size_t len = 0;
                int r;

                if (a->colon || !span_is(a->qname, a->qlen, name))
                        continue;
                v->present = true;
                v->s[0] = '\0';
                r = decode(a->raw, a->raw + a->rawlen, true, v->s, sizeof v->s, &len);
                if (r == -E2BIG)
                        v->too_long = true;
                else if (r < 0)
                        return decline(l, "a reference we do not read");
                return 0;
        }
        return 0;
}

static bool value_is(const Value *v, const char *s) {
        return v->present && !v->too_long && streq(v->s, s);
}

static int hostdev_start(Lite *l) {
        Value mode, type, managed;
        int r;

        l->hd = (Hostdev) { .mdev = false };
        r = attr_value(l, "mode", &mode);
        if (r >= 0)
                r = attr_value(l, "type", &type);
        if (r >= 0)
                r = attr_value(l, "managed", &managed);
        if (r < 0)
                return r;
        l->hd.pci = value_is(&mode, "subsystem") && value_is(&type, "pci");
        l->hd.mdev = value_is(&mode, "subsystem") && value_is(&type, "mdev");
        l->hd.managed_no = value_is(&managed, "no");
        return 0;
}

/* The first <address> of the hostdev's <source>s. */
static int address_start(Lite *l) {
        Hostdev *h = &l->hd;
        int r;

        if (h->has_address || (!h->mdev && !h->pci))
                return 0;
        h->has_address = true;
        r = attr_value(l, "uuid", &h->uuid);
        if (r >= 0)
                r = attr_value(l, "domain", &h->domain);
        if (r >= 0)
                r = attr_value(l, "bus", &h->bus);
        if (r >= 0)
                r = attr_value(l, "slot", &h->slot);
        if (r >= 0)
                r = attr_value(l, "function", &h->function);
        return r;
}

/* domxml.c's add_mdev(). */
static int hostdev_add_mdev(Lite *l) {
        Domxml *d = l->d;
        DomxmlMdev *m;

        if (!l->hd.has_address || !l->hd.uuid.present || l->hd.uuid.too_long || !uuid_is_valid(l->hd.uuid.s))
                return decline(l, "an mdev hostdev without a valid source address uuid");
        if (d->n_mdevs >= MAX_MDEVS)
                return decline(l, "too many mdev hostdevs");
        if (array_grow(&d->mdevs, d->n_mdevs, &l->mdevs_allocated, sizeof *d->mdevs) < 0)
                return -ENOMEM;
        m = &d->mdevs[d->n_mdevs];
        *m = (DomxmlMdev) { .address = NULL };
        uuid_normalize(l->hd.uuid.s, m->uuid);
        for (size_t i = 0; i < d->n_mdevs; i++)
                if (streq(d->mdevs[i].uuid, m->uuid))
                        return decline(l, "two hostdevs of one mdev");
        d->n_mdevs++;
        return 0;
}

static int pci_part(const Value *v, bool is_domain, unsigned long max, unsigned long *ret) {
        if (v->too_long)
                return -E2BIG;
        return domxml_pci_part(v->present ? v->s : NULL, is_domain, max, ret);
}

/* domxml.c's add_vgpu(). */
static int hostdev_add_vgpu(Lite *l) {
        const Hostdev *h = &l->hd;
        Domxml *d = l->d;
        unsigned long dom, bus, slot, fn;
        DomxmlVgpu *v;

        if (!h->has_address)
                return 0;
        if (pci_part(&h->domain, true, 0xffff, &dom) < 0 || pci_part(&h->bus, false, 0xff, &bus) < 0 ||
            pci_part(&h->slot, false, 0x1f, &slot) < 0 || pci_part(&h->function, false, 7, &fn) < 0)
                return decline(l, "a PCI hostdev source address that is not a PCI address");
        if (d->n_vgpus >= MAX_MDEVS)
                return decline(l, "too many PCI hostdevs");
        if (array_grow(&d->vgpus, d->n_vgpus, &l->vgpus_allocated, sizeof *d->vgpus) < 0)
                return -ENOMEM;
        v = &d->vgpus[d->n_vgpus];
        *v = (DomxmlVgpu) { .managed = !h->managed_no };
        snprintf(v->pci, sizeof v->pci, "%04lx:%02lx:%02lx.%lx", dom, bus, slot, fn);
        memcpy(v->orig_pci, v->pci, sizeof v->pci);
        for (size_t i = 0; i < d->n_vgpus; i++)
                if (streq(d->vgpus[i].pci, v->pci))
                        return decline(l, "two hostdevs of one PCI device");
        d->n_vgpus++;
        return 0;
}

/* snprintf(buf, size, "%s", s), which domxml.c's copy_attr() does: cut to
 * fit (a vGPU's class= has room for less than a valid class may be long). */
static void copy_cut(char *buf, size_t size, const char *s) {
        size_t n = strnlen(s, size - 1);

        memcpy(buf, s, n);
        buf[n] = '\0';
}

/* An optional attribute that must pass valid() when present, copied as
 * domxml.c's copy_attr() does ("" when absent). */
static int entry_attr(Lite *l, const char *name, bool (*valid)(const char *), char *buf, size_t size) {
        Value v;
        int r = attr_value(l, name, &v);

        if (r < 0)
                return r;
        if (v.present && (v.too_long || !valid(v.s)))
                return decline(l, "a metadata entry domxml_parse() refuses");
        copy_cut(buf, size, v.present ? v.s : "");
        return 0;
}

/* domxml.c's parse_vgpu_entry() and parse_meta_entry(), and the check for
 * two entries of one key. */
static int entry_start(Lite *l, bool vgpu) {
        Value key;
        Entry *e;
        int r;

        if (l->n_entries >= MAX_META_ENTRIES)
                return decline(l, "too many metadata entries");
        if (array_grow(&l->entries, l->n_entries, &l->entries_allocated, sizeof *l->entries) < 0)
                return -ENOMEM;
        e = &l->entries[l->n_entries];
        *e = (Entry) { .vgpu = vgpu };
        r = attr_value(l, vgpu ? "pci" : "uuid", &key);
        if (r < 0)
                return r;
        if (!key.present || key.too_long || !(vgpu ? pci_address_is_valid(key.s) : uuid_is_valid(key.s)))
                return decline(l, "a metadata entry domxml_parse() refuses");
        if (vgpu)
                for (size_t i = 0; key.s[i]; i++)
                        e->key[i] = (char) tolower((unsigned char) key.s[i]);
        else
                uuid_normalize(key.s, e->key);
        r = entry_attr(l, "type", name_is_valid, e->type, sizeof e->type);
        if (r >= 0)
                r = entry_attr(l, "class", mdev_class_is_valid, e->cls, sizeof e->cls);
        if (r >= 0 && !vgpu)
                r = entry_attr(l, "parent", name_is_valid, e->parent, sizeof e->parent);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l->n_entries; i++)
                if (streq(l->entries[i].key, e->key))
                        return decline(l, "two metadata entries of one device");
        l->n_entries++;
        return 0;
}

static bool is_ours(const Binding *uri) {
        return uri && span_is(uri->uri, uri->ulen, DOMXML_NAMESPACE);
}

/* The role of an element in its parent's (domxml.c's build_mode()). */
static Role child_role(Lite *l, Role parent, const char *local, size_t n, const Binding *uri) {
        bool plain = !uri;

        switch (parent) {
        case ROLE_ROOT:
                if (plain && span_is(local, n, "name"))
                        return ROLE_NAME;
                if (plain && span_is(local, n, "uuid"))
                        return ROLE_UUID;
                if (plain && span_is(local, n, "devices"))
                        return ROLE_DEVICES;
                if (plain && span_is(local, n, "metadata"))
                        return ROLE_METADATA;
                return ROLE_OTHER;
        case ROLE_DEVICES:
                return plain && span_is(local, n, "hostdev") ? ROLE_HOSTDEV : ROLE_OTHER;
        case ROLE_HOSTDEV:
                return plain && span_is(local, n, "source") ? ROLE_SOURCE : ROLE_OTHER;
        case ROLE_METADATA:
                return is_ours(uri) && span_is(local, n, "mdevs") ? ROLE_MDEVS : ROLE_OTHER;
        default:
                (void) l;
                return ROLE_OTHER;
        }
}

/* What the element's start means for the document: its role, and what it
 * holds when the role is one that is read. */
static int element_start(Lite *l, const char *local, size_t n, const Binding *uri, Role *ret) {
        Role parent = l->depth == 0 ? ROLE_OTHER : l->stack[l->depth - 1].role;

        if (l->depth == 0) {
                if (uri || !span_is(local, n, "domain"))
                        return decline(l, "a root element other than <domain>");
                *ret = ROLE_ROOT;
                return 0;
        }
        if (parent == ROLE_NAME || parent == ROLE_UUID)
                return decline(l, "an element inside <name> or <uuid>");
        *ret = child_role(l, parent, local, n, uri);
        switch (*ret) {
        case ROLE_NAME:
                if (l->have_name)
                        return decline(l, "a second <name>");
                l->have_name = true;
                return 0;
        case ROLE_UUID:
                if (l->have_uuid)
                        return decline(l, "a second <uuid>");
                l->have_uuid = true;
                return 0;
        case ROLE_HOSTDEV:
                return hostdev_start(l);
        default:
                break;
        }
        if (parent == ROLE_SOURCE && !uri && span_is(local, n, "address"))
                return address_start(l);
        if (parent == ROLE_MDEVS && is_ours(uri) && (span_is(local, n, "mdev") || span_is(local, n, "vgpu")))
                return entry_start(l, span_is(local, n, "vgpu"));
        return 0;
}

static int element_end(Lite *l) {
        Frame *f = &l->stack[l->depth - 1];

        l->n_ns = f->n_ns;
        l->depth--;
        if (l->depth == 0)
                l->root_done = true;
        if (f->role != ROLE_HOSTDEV)
                return 0;
        if (l->hd.mdev)
                return hostdev_add_mdev(l);
        if (l->hd.pci)
                return hostdev_add_vgpu(l);
        return 0;
}

/* --- the document ------------------------------------------------------------ */

static void skip_space(Lite *l) {
        const char *p = l->p; /* not l->p++: a store and a load for each byte */

        while (p < l->end && is_space(*p))
                p++;
        l->p = p;
}

/* One attribute at l->p: name S? = S? quoted value, checked. */
static int parse_attr(Lite *l) {
        Attr *a;
        const char *close;
        unsigned stop;
        int r;

        if (l->n_attrs >= LITE_MAX_ATTRS)
                return decline(l, "too many attributes");
        a = &l->attrs[l->n_attrs];
        r = parse_qname(l, &a->qname, &a->qlen, &a->colon);
        if (r < 0)
                return r;
        skip_space(l);
        if (l->p >= l->end || *l->p != '=')
                return decline(l, "an attribute without '='");
        l->p++;
        skip_space(l);
        if (l->p >= l->end || (*l->p != '"' && *l->p != '\''))
                return decline(l, "an attribute value without quotes");
        a->raw = l->p + 1;
        stop = C_VALUE | (*l->p == '"' ? C_QUOT : C_APOS);
        /* Most values hold nothing decode() looks at: one pass to the quote. */
        for (close = a->raw; close < l->end && !is_class(*close, stop); close++)
                ;
        if (close >= l->end || *close != *l->p) {
                /* from what stopped the pass on: what came before is plain */
                const char *look = close;

                close = memchr(look, *l->p, (size_t) (l->end - look));
                if (!close)
                        return decline(l, "an unterminated attribute value");
                if (decode(look, close, true, NULL, 0, NULL) < 0)
                        return decline(l, "an attribute value we do not read");
        }
        a->rawlen = (size_t) (close - a->raw);
        l->p = close + 1;
        l->n_attrs++;
        return 0;
}

/* A start tag at l->p ('<'); *empty for <x/>. */
static int parse_start_tag(Lite *l) {
        const Binding *uri;
        Frame *f;
        bool empty = false;
        size_t c; /* where the prefix's ':' is, 0: none */
        int r;

        if (l->root_done)
                return decline(l, "content after the root element");
        if (l->depth >= LITE_MAX_DEPTH)
                return decline(l, "nesting deeper than we read");
        f = &l->stack[l->depth];
        *f = (Frame) { .n_ns = l->n_ns };
        l->p++;
        r = parse_qname(l, &f->qname, &f->qlen, &c);
        if (r < 0)
                return r;
        l->n_attrs = 0;
        for (;;) {
                bool space = l->p < l->end && is_space(*l->p);

                skip_space(l);
                if (l->p >= l->end)
                        return decline(l, "an unterminated start tag");
                if (*l->p == '>' || (*l->p == '/' && l->p + 1 < l->end && l->p[1] == '>')) {
                        empty = *l->p == '/';
                        l->p += empty ? 2 : 1;
                        break;
                }
                if (!space)
                        return decline(l, "attributes without white space between them");
                r = parse_attr(l);
                if (r < 0)
                        return r;
        }
        r = ns_declare(l);
        if (r >= 0) {
                r = ns_resolve(l, f->qname, c, &uri);
                if (r >= 0)
                        r = element_start(l, f->qname + (c ? c + 1 : 0), f->qlen - (c ? c + 1 : 0), uri, &f->role);
        }
        if (r < 0)
                return r;
        l->depth++;
        return empty ? element_end(l) : 0;
}

static int parse_end_tag(Lite *l) {
        const Frame *f;
        const char *q;
        size_t qlen;
        int r;

        if (l->depth == 0)
                return decline(l, "an end tag without its start");
        f = &l->stack[l->depth - 1];
        l->p += 2;
        r = parse_qname(l, &q, &qlen, &(size_t) { 0 });
        if (r < 0)
                return r;
        if (qlen != f->qlen || memcmp(q, f->qname, qlen) != 0)
                return decline(l, "an end tag that does not match its start");
        skip_space(l);
        if (l->p >= l->end || *l->p != '>')
                return decline(l, "an unterminated end tag");
        l->p++;
        return element_end(l);
}

/* Character data up to the next '<' (or the end). */
static int parse_text(Lite *l) {
        const char *e = l->p;
        bool plain;
        Role role;
        int r;

        /* Most text (the indentation between tags) holds nothing decode()
         * looks at: one pass to the '<'. */
        while (e < l->end && !is_class(*e, C_TEXT | C_LT))
                e++;
        plain = e >= l->end || *e == '<';
        if (!plain) {
                e = memchr(e, '<', (size_t) (l->end - e));
                if (!e)
                        e = l->end;
        }
        if (l->depth == 0) {
                skip_space(l);
                if (l->p != e)
                        return decline(l, "text outside the root element");
                return 0;
        }
        role = l->stack[l->depth - 1].role;
        if (role == ROLE_NAME)
                r = decode(l->p, e, false, l->name, sizeof l->name, &l->name_len);
        else if (role == ROLE_UUID)
                r = decode(l->p, e, false, l->uuid, sizeof l->uuid, &l->uuid_len);
        else
                r = plain ? 0 : decode(l->p, e, false, NULL, 0, NULL);
        if (r == -E2BIG)
                return decline(l, "a <name> or <uuid> longer than domxml_parse() takes");
        if (r < 0)
                return decline(l, "text we do not read");
        l->p = e;
        return 0;
}

/* <?xml version="1.0" [encoding="UTF-8"] [standalone="yes|no"]?>, if
 * there is one. */
static int parse_declaration(Lite *l) {
        static const struct {
                const char *name, *values[3];
                bool required;
        } parts[] = {
                { "version", { "1.0" }, true },
                { "encoding", { "UTF-8", "utf-8" }, false },
                { "standalone", { "yes", "no" }, false },
        };

        if ((size_t) (l->end - l->p) < 6 || memcmp(l->p, "<?xml", 5) != 0 || !is_space(l->p[5]))
                return 0;
        l->p += 5;
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                const char *save = l->p;
                size_t n = strlen(parts[i].name);
                bool ok = false;

                skip_space(l);
                if ((size_t) (l->end - l->p) < n || memcmp(l->p, parts[i].name, n) != 0 || l->p == save) {
                        if (parts[i].required)
                                return decline(l, "an XML declaration we do not read");
                        l->p = save;
                        continue;
                }
                l->p += n;
                skip_space(l);
                if (l->p >= l->end || *l->p != '=')
                        return decline(l, "an XML declaration we do not read");
                l->p++;
                skip_space(l);
                for (size_t k = 0; k < 3 && parts[i].values[k] && !ok; k++) {
                        size_t m = strlen(parts[i].values[k]);
                        ok = (size_t) (l->end - l->p) >= m + 2 && (*l->p == '"' || *l->p == '\'') &&
                             memcmp(l->p + 1, parts[i].values[k], m) == 0 && l->p[m + 1] == *l->p;
                        if (ok)
                                l->p += m + 2;
                }
                if (!ok)
                        return decline(l, "an XML declaration we do not read");
        }
        skip_space(l);
        if ((size_t) (l->end - l->p) < 2 || memcmp(l->p, "?>", 2) != 0)
                return decline(l, "an XML declaration we do not read");
        l->p += 2;
        return 0;
}

static int parse_document(Lite *l) {
        int r = parse_declaration(l);

        while (r >= 0 && l->p < l->end) {
                if (*l->p != '<')
                        r = parse_text(l);
                else if (l->p + 1 < l->end && l->p[1] == '/')
                        r = parse_end_tag(l);
                else if (l->p + 1 < l->end && (l->p[1] == '!' || l->p[1] == '?'))
                        r = decline(l, "a comment, CDATA section, DOCTYPE or processing instruction");
                else
                        r = parse_start_tag(l);
        }
        if (r < 0)
                return r;
        if (!l->root_done)
                return decline(l, "no complete root element");
        return 0;
}

/* domxml.c's parse_identity() and apply_metadata(). */
static int finish(Lite *l) {
        Domxml *d = l->d;

        if (!l->have_name || l->name_len == 0)
                return decline(l, "no <name>");
        for (size_t i = 0; i < l->name_len; i++)
                if ((unsigned char) l->name[i] < 0x20 || l->name[i] == 0x7f)
                        return decline(l, "a <name> that is not plain text");
        memcpy(d->name, l->name, l->name_len + 1);
        if (l->have_uuid) {
                if (!uuid_is_valid(l->uuid))
                        return decline(l, "a <uuid> that is not a UUID");
                uuid_normalize(l->uuid, d->uuid);
        }
        for (size_t i = 0; i < l->n_entries; i++) {
                const Entry *e = &l->entries[i];
                int k;

                if (e->vgpu) {
                        k = domxml_find_vgpu(d, e->key);
                        if (k < 0)
                                continue;
                        d->vgpus[k].has_meta = true;
                        copy_cut(d->vgpus[k].type, sizeof d->vgpus[k].type, e->type);
                        copy_cut(d->vgpus[k].mdev_class, sizeof d->vgpus[k].mdev_class, e->cls);
                        continue;
                }
                k = domxml_find_mdev(d, e->key);
                if (k < 0)
                        continue; /* an orphan: only migrate cares (domxml_has_orphan_meta()) */
                d->mdevs[k].has_meta = true;
                copy_cut(d->mdevs[k].type, sizeof d->mdevs[k].type, e->type);
                copy_cut(d->mdevs[k].mdev_class, sizeof d->mdevs[k].mdev_class, e->cls);
                copy_cut(d->mdevs[k].parent, sizeof d->mdevs[k].parent, e->parent);
        }
        return 0;
}

int domlite_parse(const char *buf, size_t len, Domxml **ret) {
        _cleanup_domlite_free_ Domxml *d = NULL;
        _cleanup_free_ Lite *l = NULL;
        int r;

        l = calloc(1, sizeof *l);
        d = calloc(1, sizeof *d);
        if (!l || !d)
                return -ENOMEM;
        *l = (Lite) { .buf = buf, .p = buf, .end = buf + len, .d = d };
        if (len == 0 || len > DOMXML_MAX_SIZE)
                r = decline(l, "an empty or oversized document");
        else if (!chars_valid(buf, len))
                r = decline(l, "bytes that are not UTF-8 of XML characters, or a carriage return");
        else {
                r = parse_document(l);
                if (r >= 0)
                        r = finish(l);
        }
        free(l->ns);
        free(l->entries);
        if (r < 0)
                return r;
        *ret = steal_pointer(&d);
        return 0;
}

void domlite_free(Domxml *d) {
        if (!d)
                return;
        free(d->mdevs);
        free(d->vgpus);
        free(d);
}
