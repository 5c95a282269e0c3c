/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inside the record (ledger.h): what its files share. Not installed, and
 * included by lib/ledger*.c only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "ledger.h"

/* --- the text format (ledger-record.c) ----------------------------------- */

/* The longest line of an encoded guest name. */
#define GUEST_CHUNK 120

/* Percent-encodes s into out (at least 3 * strlen(s) + 1 bytes). */
void ledger_guest_encode(const char *s, char *out);
/* The length of the first line of an encoded name: at most GUEST_CHUNK
 * bytes, never splitting a %xx escape (each line is decoded on its own). */
size_t ledger_guest_first_chunk(const char *enc);

/* --- the store (ledger.c) ------------------------------------------------- */

/* A record is a few hundred bytes; anything near this is not one of ours. */
#define LEDGER_FILE_MAX 4096

/* Reads the record file uuid into buf, NUL-terminated: -ENOENT without a
 * message if there is none, -EBADMSG if it cannot be a record, other
 * -errno with a message. */
int ledger_load(int dirfd, const char *uuid, char buf[LEDGER_FILE_MAX]);
/* Lists the records, of one guest or one parent if given, reading every
 * record file (what the listings fall back to without an index). */
int ledger_list_filtered(int dirfd, const char *guest, const char *parent,
                         LedgerEntry **ret, size_t *ret_n, size_t *ret_bad, char ***ret_unreadable);

/* --- the indexes (ledger-index.c) ----------------------------------------- */

/* The entries of a record about to be renamed into place (-errno with a
 * message): in its guest's index, in the free index (a record without a
 * guest), in its parent's. */
int ledger_index_guest_add(int dirfd, const char *guest, const char *uuid);
int ledger_index_free_add(int dirfd, const char *uuid);
int ledger_index_parent_add(int dirfd, const char *parent, const char *uuid);
bool ledger_index_parent_has(int dirfd, const char *parent, const char *uuid);
/* Drop the entries of a removed record. Best effort: a stale entry is only
 * a hint. */
void ledger_index_parent_drop(int dirfd, const char *parent, const char *uuid);
void ledger_index_guest_drop(int dirfd, const char *guest, const char *uuid);
