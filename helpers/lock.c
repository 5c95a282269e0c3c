/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Placeholder until the implementation lands. */
#include "lock.h"
