/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * config.c's inside, shared by the files it is split into (as kmod's
 * libkmod-internal.h): config.c (what each section and key means, the
 * queries), config-reader.c (each raw line before inih sees it),
 * config-check.c (the checks of the whole) and config-load.c (reading the
 * file, the errors). Nothing outside them includes it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define CONFIG_DEFAULT_DISPLAY "/" CONFIG_DEFAULT_PATH
/* inih splits "key = value" at the first '=' or ':', so "0000:41:00.0 = 4"
 * would become key "0000". The reader swaps the ':' of such a key for this
 * byte and the handler swaps it back. */
#define COLON_PLACEHOLDER '\037'

typedef enum SectionKind {
        SECTION_NONE,     /* before the first section header */
        SECTION_INVALID,  /* already reported: its keys are skipped */
        SECTION_DEVICES,
        SECTION_TYPE,     /* [mdev_<type>] or [vgpu_<type>] */
        SECTION_HOOKS,
        SECTION_SRIOV,
        SECTION_PLACEMENT,
        SECTION_GPU,      /* [gpu]: the vendor tools */
        SECTION_GPU_PF,   /* [gpu_<PF>]: one GPU's declared state */
} SectionKind;

typedef struct ParseError {
        unsigned line;
        size_t seq;       /* order of detection, for a stable sort */
        char *msg;
} ParseError;

/* One [mdev_<type>]/[vgpu_<type>] (both spellings of one type merge). */
typedef struct TypeSection {
        char *type;
        unsigned line;            /* of its first header */
        char **addresses;         /* normalised, in file order */
        unsigned *address_lines;
        size_t n_addresses, addresses_allocated, lines_allocated;
        unsigned max_instances;
        char *mdev_class;
} TypeSection;

typedef struct Parser {
        const char *path;         /* for messages */
        char *text;               /* the whole file, read at once */
        size_t text_len, text_pos;

        /* the reader's view of the raw line inih is about to handle */
        unsigned line;
        bool continuation;
        char *long_value;         /* the value of a line too long for inih, or NULL */
        char *buf;
        size_t buf_size;

        SectionKind kind;
        TypeSection *section;     /* SECTION_TYPE */
        size_t gpu;               /* SECTION_GPU_PF: its index in config->gpus */
        char *last_key;           /* canonical key of the last key line, for continuations */
        bool last_key_bad;        /* its first line was refused: skip its continuations */

        ParseError *errors;
        size_t n_errors;

        char **seen;              /* "<section>\037<key>" */
        unsigned *seen_lines;
        size_t n_seen;

        char **enabled;
        unsigned *enabled_lines;
        size_t n_enabled;

        TypeSection *sections;
        size_t n_sections;

        Config *config;           /* [hooks] and [sriov] go straight in */
} Parser;

_printf_(3, 4)
void parser_error(Parser *p, unsigned line, const char *fmt, ...);
char *strip(char *s);
void parser_section(Parser *p, const char *name);
int config_handler(void *user, const char *section, const char *raw_name, const char *value);
void config_type_done(ConfigType *t);
char *config_reader(char *str, int num, void *stream);
int parser_finish(Parser *p);
/* [gpu_<PF>]'s keys (config-gpu.c): whether key is one, and its value
 * read into g (an error is reported). */
#define PARSER_GPU_KEYS "mode, mig_instances, spatial_partition, vfs, vram_quota, exec_quantum_ms, preempt_timeout_us"
bool parser_gpu_key_known(const char *key);
void parser_gpu_value(Parser *p, ConfigGpu *g, const char *key, const char *value);
/* The checks of the [gpu_<PF>] sections once the file is read
 * (config-gpu.c): each key's values against the others'. */
void parser_check_gpus(Parser *p);
