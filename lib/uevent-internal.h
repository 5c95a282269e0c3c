/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * uevent.c's inside, shared by the files it is split into (as kmod's
 * libkmod-internal.h): uevent.c (classifying an event, its context, the
 * handlers of parents, mdevs and PCI devices) and uevent-record.c (the
 * record: made true, told, swept). Nothing outside them includes it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "config.h"
#include "ledger.h"
#include "uevent.h"

/* --- the context of one event ------------------------------------------- */

typedef struct UeventContext {
        int rootfd;
        const Uevent *ev;
        char boot_id[UUID_STRING_MAX];
        bool config_loaded;
        Config *config;  /* NULL: none loaded yet, or it has errors */
        int ledgerfd;
        int lockfd;
        /* A batch: the record changes one event makes under the lock. The
         * directory is fsynced once at its end (context_flush(), before the
         * lock goes), and what the event has to say is held until then
         * (log_hold()), so that nothing is reported done that is not
         * durable. */
        bool batch;
        bool dirty;          /* changed since the last ledger_sync() */
        LedgerEntry *stale;  /* records of an earlier boot: marked lost, or free and dropped */
        size_t n_stale;
        unsigned made;       /* devices made again (recreate = eager) */
} UeventContext;

int context_open_ledger(UeventContext *c);

int record_drop(UeventContext *c, const LedgerEntry *e, const char *why, bool summarize);
int record_set(UeventContext *c, LedgerEntry *e, LedgerState state, LedgerOrigin origin, const char *boot_id);
void device_type_now(UeventContext *c, const Backend *b, const char *key, char type[NAME_STRING_MAX]);
int record_refresh(UeventContext *c, LedgerEntry *e, bool recreate, bool apply);
int context_flush(UeventContext *c);
bool record_is_stale(const UeventContext *c, const LedgerEntry *e);
int records_scan(UeventContext *c, const char *parent, LedgerEntry **ret, size_t *ret_n);
int record_reread(UeventContext *c, const char *uuid, const char *parent, LedgerEntry *ret);
bool sweep_is_done(const UeventContext *c);
void sweep_mark_done(UeventContext *c);
void sweep_finish(UeventContext *c, const LedgerEntry *list, size_t n);
