/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * domxml.c's inside, shared by the files it is split into (as kmod's
 * libkmod-internal.h): domxml-sax.c (the hardened parse, building only what
 * is read), domxml.c (reading the tree, changing it) and domxml-format.c
 * (writing it out). Nothing outside them includes it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "domxml.h"

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

static inline DomxmlPrivate *domxml_private(const Domxml *d) {
        return (DomxmlPrivate *) d;
}

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

int parse_doc(const char *buf, size_t len, bool partial, ParseState *st, xmlDoc **ret);
int parse_tree(Domxml *d);
