/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A stand-in for ICU's common library (libicuuc.so.<major>), for the hook's
 * worker only: the worker program (worker-main.c) loads it by its path just
 * before the worker, and the libicuuc.so.<major> that libxml2 needs is then
 * this library, found by its soname. Nothing else on the host sees it.
 *
 * Why: Debian's libxml2 is built with both iconv and ICU, and needs
 * libicuuc, which needs libicudata (30 MiB), libstdc++ and libgcc_s. The
 * hook uses none of them, but loading and initialising them was a large
 * share of every hook run with an mdev (BENCHMARKS.md, "Where the time
 * goes"): libgcc_s alone runs CPUID a dozen times at load, and in a
 * virtual machine each is an exit to the hypervisor.
 *
 * What libxml2 loses: nothing it uses here. libxml2 (2.9, encoding.c,
 * xmlFindCharEncodingHandler) handles UTF-8, UTF-16, Latin-1 and ASCII
 * itself, asks iconv for any other encoding, and asks ICU only for a name
 * that iconv does not know. This stand-in answers that question the way ICU
 * answers for a converter it does not have, so such a document is refused
 * as an unsupported encoding, as it would be on a libxml2 built without
 * ICU. libvirt writes UTF-8 only.
 *
 * Every function that libxml2 imports from ICU is here, with ICU's own
 * prototype (the header renames them with the version suffix, e.g.
 * ucnv_open_72). The unit test test-worker-load loads it and the worker as
 * the worker program does, but with RTLD_NOW, which fails if libxml2 ever imports
 * one more, and checks that neither the real libicuuc nor libstdc++ came.
 */
#include <unicode/ucnv.h>

static void unsupported(UErrorCode *err) {
        if (err && U_SUCCESS(*err))
                *err = U_UNSUPPORTED_ERROR;
}

U_CAPI UConverter *U_EXPORT2 ucnv_open(const char *converterName, UErrorCode *err) {
        (void) converterName;
        /* What ICU says for a converter name it has no data for. */
        if (err && U_SUCCESS(*err))
                *err = U_FILE_ACCESS_ERROR;
        return NULL;
}

U_CAPI void U_EXPORT2 ucnv_close(UConverter *converter) {
        (void) converter; /* ucnv_open() never returned one */
}

U_CAPI void U_EXPORT2 ucnv_convertEx(UConverter *targetCnv, UConverter *sourceCnv, char **target,
                                     const char *targetLimit, const char **source, const char *sourceLimit,
                                     UChar *pivotStart, UChar **pivotSource, UChar **pivotTarget,
                                     const UChar *pivotLimit, UBool reset, UBool flush, UErrorCode *pErrorCode) {
        (void) targetCnv, (void) sourceCnv, (void) target, (void) targetLimit, (void) source, (void) sourceLimit;
        (void) pivotStart, (void) pivotSource, (void) pivotTarget, (void) pivotLimit, (void) reset, (void) flush;
        unsupported(pErrorCode);
}

U_CAPI void U_EXPORT2 ucnv_setToUCallBack(UConverter *converter, UConverterToUCallback newAction,
                                          const void *newContext, UConverterToUCallback *oldAction,
                                          const void **oldContext, UErrorCode *err) {
        (void) converter, (void) newAction, (void) newContext, (void) oldAction, (void) oldContext;
        unsupported(err);
}

U_CAPI void U_EXPORT2 ucnv_setFromUCallBack(UConverter *converter, UConverterFromUCallback newAction,
                                            const void *newContext, UConverterFromUCallback *oldAction,
                                            const void **oldContext, UErrorCode *err) {
        (void) converter, (void) newAction, (void) newContext, (void) oldAction, (void) oldContext;
        unsupported(err);
}

U_CAPI void U_EXPORT2 UCNV_TO_U_CALLBACK_STOP(const void *context, UConverterToUnicodeArgs *toUArgs,
                                              const char *codeUnits, int32_t length,
                                              UConverterCallbackReason reason, UErrorCode *err) {
        (void) context, (void) toUArgs, (void) codeUnits, (void) length, (void) reason, (void) err;
        /* ICU's STOP callback leaves the error as it is: stop converting. */
}

U_CAPI void U_EXPORT2 UCNV_FROM_U_CALLBACK_STOP(const void *context, UConverterFromUnicodeArgs *fromUArgs,
                                                const UChar *codeUnits, int32_t length, UChar32 codePoint,
                                                UConverterCallbackReason reason, UErrorCode *err) {
        (void) context, (void) fromUArgs, (void) codeUnits, (void) length, (void) codePoint, (void) reason, (void) err;
}
