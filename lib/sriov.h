/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Enabling the virtual functions of an SR-IOV physical function that the
 * config's [sriov] section names, when the udev helper sees it appear
 * (uevent.c: a pci add or bind). Either by writing sriov_numvfs, or by
 * running the [sriov] command (a vendor tool) once per boot and PF.
 */
#pragma once

#include <stdbool.h>

#include "config.h"

/* The [sriov] command is killed after this many seconds. */
#define SRIOV_COMMAND_TIMEOUT 30

/* 1 if the config's text names the address at all (any case), 0 if not or
 * there is no config; 1 also when the config cannot be read (config_load()
 * then says what is wrong). Spares every other PCI device the parse. */
int sriov_config_mentions(int rootfd, const char *address);

/* Enables the virtual functions of the PF at address (sys/bus/pci/devices/)
 * as config's [sriov] asks, if it names it. added: the event was "add",
 * after which a driver may not be bound yet (a "bind" follows). Outcomes
 * and the command's output are logged (log.h), one line each. 0, also when there was nothing to
 * do or it failed in a way that was logged; -errno (with error_set()) when
 * it could not look. */
int sriov_enable(int rootfd, const Config *config, const char *address, bool added);
