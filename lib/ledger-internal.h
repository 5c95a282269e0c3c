/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inside the record (ledger.h): what its files share. Not installed, and
 * included by lib/ledger*.c only.
 */
#pragma once

#include <stddef.h>

#include "ledger.h"

/* --- the text format (ledger-record.c) ----------------------------------- */

/* The longest line of an encoded guest name. */
#define GUEST_CHUNK 120

/* Percent-encodes s into out (at least 3 * strlen(s) + 1 bytes). */
void guest_encode(const char *s, char *out);
/* The length of the first line of an encoded name: at most GUEST_CHUNK
 * bytes, never splitting a %xx escape (each line is decoded on its own). */
size_t guest_first_chunk(const char *enc);
