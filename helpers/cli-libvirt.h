/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the commands of mdev-hooks-reconcile, the one program that links
 * libvirt, share about libvirt's API: cleanup helpers and its messages.
 */
#pragma once

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

/* libvirt prints every error to stderr unless told otherwise; we report its
 * message ourselves, once. */
static inline void libvirt_error_silent(void *userdata, virErrorPtr err) {
}

static inline void virDomainFreep(virDomainPtr *d) {
        if (*d)
                virDomainFree(*d);
}

static inline void virConnectClosep(virConnectPtr *c) {
        if (*c)
                virConnectClose(*c);
}

static inline const char *libvirt_message(void) {
        const char *m = virGetLastErrorMessage();
        return m ? m : "unknown libvirt error";
}
