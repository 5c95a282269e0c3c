/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /etc/mdev-hooks/mdev-hooks.conf (doc/design.md §3), parsed with inih.
 *
 * Reads Nova's own sections ([devices] enabled_mdev_types, [mdev_<type>];
 * the old names enabled_vgpu_types and [vgpu_<type>] too) plus [hooks] and
 * [sriov]. A config with any error is refused whole; every error names the
 * file, the line and the reason.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "enumtable.h"
#include "util.h"

#define CONFIG_DEFAULT_PATH "etc/mdev-hooks/mdev-hooks.conf" /* under the root */

typedef enum ConfigRelease {
        CONFIG_RELEASE_REMOVE, /* default */
        CONFIG_RELEASE_KEEP,
        _CONFIG_RELEASE_MAX,
        _CONFIG_RELEASE_INVALID = -EINVAL,
} ConfigRelease;

typedef enum ConfigPlacement {
        CONFIG_PLACEMENT_PACK, /* default */
        CONFIG_PLACEMENT_SPREAD,
        _CONFIG_PLACEMENT_MAX,
        _CONFIG_PLACEMENT_INVALID = -EINVAL,
} ConfigPlacement;

typedef enum ConfigRecreate {
        CONFIG_RECREATE_LAZY, /* default */
        CONFIG_RECREATE_EAGER,
        _CONFIG_RECREATE_MAX,
        _CONFIG_RECREATE_INVALID = -EINVAL,
} ConfigRecreate;

/* A GPU's declared mode ([gpu_<PF>] mode =; NVIDIA, doc/design.md §9). */
typedef enum ConfigGpuMode {
        CONFIG_GPU_MODE_EQUAL, /* default: time-sliced, one size per GPU */
        CONFIG_GPU_MODE_MIXED, /* heterogeneous time-sliced sizes */
        CONFIG_GPU_MODE_MIG,   /* MIG-backed vGPUs in GPU instances */
        _CONFIG_GPU_MODE_MAX,
        _CONFIG_GPU_MODE_INVALID = -EINVAL,
} ConfigGpuMode;

#define CONFIG_GPU_SRIOV_MANAGE "/usr/lib/nvidia/sriov-manage"
#define CONFIG_GPU_NVIDIA_SMI "/usr/bin/nvidia-smi"

/* An Intel GPU's per-VF key ([gpu_<PF>] vram_quota, exec_quantum_ms,
 * preempt_timeout_us): one value for every VF, or one per VF in order. */
typedef struct ConfigGpuList {
        uint64_t *v;          /* n values; NULL: the key is not given */
        size_t n;
        unsigned line;        /* of its key */
} ConfigGpuList;

/* One [gpu_<PF>] section: the state the boot plan brings the GPU to. */
typedef struct ConfigGpu {
        char *address;        /* the PF, normalised */
        ConfigGpuMode mode;
        char **mig_instances; /* mig: GPU instance profiles to make ("1g.24gb"), in order, may repeat */
        char *spatial_partition; /* AMD: the partition expected ("CPX"), checked, never set; NULL: none */
        unsigned vfs;            /* Intel xe: the VFs to enable; 0: none declared */
        ConfigGpuList vram_quota;         /* Intel xe: VRAM quota in bytes; none: the driver shares out */
        ConfigGpuList exec_quantum_ms;    /* Intel xe: u32, 0 unlimited; none: left as the driver has it */
        ConfigGpuList preempt_timeout_us; /* Intel xe: u32, 0 unlimited; none: left as the driver has it */
        unsigned line;        /* of its section header */
} ConfigGpu;

typedef struct ConfigType {
        char *name;           /* the mdev type, e.g. "nvidia-35" */
        char **addresses;     /* device_addresses, sorted; NULL or empty: the default type */
        unsigned max_instances; /* 0: no cap */
        char *mdev_class;     /* "VGPU" or "CUSTOM_..." */
        unsigned line;        /* line of its [mdev_<type>] section, or of enabled_mdev_types */
} ConfigType;

typedef struct ConfigSriovPf {
        char *address;        /* PCI address of the physical function */
        unsigned numvfs;      /* ignored when max is set */
        bool max;             /* "max": sriov_totalvfs */
        unsigned line;        /* of its key, for messages */
} ConfigSriovPf;

typedef struct Config {
        char *path;           /* as given, for messages */
        bool missing;         /* the default config does not exist (no types enabled) */

        ConfigType *types;    /* in the order of enabled_mdev_types */
        size_t n_types;
        const ConfigType *default_type; /* the one without device_addresses, or NULL */

        ConfigRelease release;
        ConfigPlacement placement;
        ConfigRecreate recreate;
        unsigned lock_timeout; /* seconds, default 30 */
        unsigned parent_wait;  /* seconds, default 0 */

        ConfigSriovPf *sriov;
        size_t n_sriov;
        char *sriov_command;  /* NULL: write sriov_numvfs */

        ConfigGpu *gpus;      /* [gpu_<PF>] sections, in file order */
        size_t n_gpus;
        char *gpu_sriov_manage; /* [gpu] sriov_manage, default CONFIG_GPU_SRIOV_MANAGE */
        char *gpu_nvidia_smi;   /* [gpu] nvidia_smi, default CONFIG_GPU_NVIDIA_SMI */
        unsigned gpu_unbind_retries;  /* [gpu] unbind_retries, default 5 */
        unsigned gpu_unbind_retry_ms; /* [gpu] unbind_retry_ms, default 1000 */

        /* What the config says that Nova accepts with a warning, and that
         * mdev-hooks does too, the way Nova does ("<file>:<line>: ..."):
         * programs log them; check-config refuses them. */
        char **warnings;
        char *placement_url;        /* [placement] url, or NULL */
        char *placement_token_file; /* [placement] token_file (absolute), or NULL */

        char *text;           /* the text it was parsed from, and a '\0'; NULL when missing */
        size_t text_len;
} Config;

/* Loads and validates the config. path NULL means CONFIG_DEFAULT_PATH under
 * rootfd; otherwise path is opened as given (relative to the cwd).
 *
 * A missing default config is not an error: it yields an empty config (no
 * types enabled), so that a host without one still starts guests without
 * mdevs. A missing explicit path is an error.
 *
 * On failure returns -EINVAL (or -errno for I/O) and leaves *ret untouched.
 * Its error (error.h) is the first problem, "<file>:<line>: <reason>", with
 * how many more there are: what a program that only needs the reason says.
 * A program that shows every problem (check-config) also passes ret_errors,
 * which gets one line per problem, sorted by line.
 *
 * Two or more types without device_addresses load as Nova (22+) loads them:
 * the first in enabled_mdev_types is the default, the later ones are not
 * enabled, and (*ret)->warnings says so. */
int config_load(int rootfd, const char *path, Config **ret, char ***ret_errors);
/* The config config_load() loaded with path from a file holding text (len
 * bytes; NULL: no file), parsed again without reading any file: a
 * Config.text handed from one program to another. Its warnings again, its
 * errors as config_load()'s first. */
int config_parse_text(const char *path, const char *text, size_t len, Config **ret);
void config_free(Config *c);
static inline void config_freep(Config **c) {
        config_free(*c);
}
#define _cleanup_config_free_ _cleanup_(config_freep)

/* The type a parent serves: the type listing it in device_addresses, else the
 * default type, else NULL. */
const ConfigType *config_parent_type(const Config *c, const char *parent);
/* Every type a parent serves, in config order, into ret (at most size, no
 * terminator): the types listing it in device_addresses (several only for a
 * mixed-size or MIG GPU), else the default type, else none. Returns how many
 * there are (may be more than size). */
size_t config_parent_types(const Config *c, const char *parent, const ConfigType **ret, size_t size);
/* An enabled type by name, or NULL. */
const ConfigType *config_find_type(const Config *c, const char *type);
/* True when a parent is named explicitly under some type. */
bool config_parent_is_listed(const Config *c, const char *parent);

/* "8G", "512M", "1073741824": a size in bytes, K M G T by 1024 (pure).
 * -EINVAL, or -ERANGE beyond 64 bits. */
int config_parse_size(const char *s, uint64_t *ret);
/* The [gpu_<PF>] section of a PF, or NULL (equal-size, no plan). */
const ConfigGpu *config_gpu(const Config *c, const char *pf);
/* VF k's (1-based) value of a per-VF key: its own, or the one for every
 * VF. false: the key is not given. */
static inline bool config_gpu_list_get(const ConfigGpuList *l, unsigned k, uint64_t *ret) {
        if (!l->v || l->n == 0 || k == 0 || (l->n > 1 && k > l->n))
                return false;
        *ret = l->v[l->n == 1 ? 0 : k - 1];
        return true;
}
/* Whether a [gpu_<PF>] section is an NVIDIA GPU's (a mode), not an AMD
 * GPU's partition or an Intel GPU's VFs. */
static inline bool config_gpu_is_nvidia(const ConfigGpu *g) {
        return g && !g->spatial_partition && !g->vfs;
}

/* "nvidia-35, nvidia-36" (config order): for messages such as "type X is not
 * enabled here; enabled: ...". With no type enabled, "none" and the file to
 * write, under MDEV_HOOKS_ROOT: "none (/etc/mdev-hooks/mdev-hooks.conf does
 * not exist: ...)". Cut short to fit size. */
void config_enabled_types_string(const Config *c, char *buf, size_t size);

/* Strings for the enums, for messages and JSON. */
ENUM_DECL(config_release, ConfigRelease);
ENUM_DECL(config_placement, ConfigPlacement);
ENUM_DECL(config_recreate, ConfigRecreate);
ENUM_DECL(config_gpu_mode, ConfigGpuMode);

