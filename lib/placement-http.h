/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Requests to an OpenStack Placement endpoint: libcurl for HTTP, json-c for
 * the bodies. Every request carries `OpenStack-API-Version: placement
 * PLACEMENT_MICROVERSION` and, when a token is given, `X-Auth-Token`. One
 * connection is kept open and reused where the server allows it.
 *
 * Linked into the CLI only: a hook never touches the network.
 */
#pragma once

#include <stdbool.h>

#include <json-c/json.h>

typedef struct PlacementHttp PlacementHttp;

/* url: "http://host:port" or with a path prefix ("https://cloud/placement");
 * token: NULL for none; timeout in seconds for a whole request. */
int placement_http_new(const char *url, const char *token, unsigned timeout, PlacementHttp **ret);
void placement_http_free(PlacementHttp *h);
static inline void placement_http_freep(PlacementHttp **h) {
        placement_http_free(*h);
}
#define _cleanup_placement_http_ _cleanup_(placement_http_freep)

/* Sends METHOD path (below the URL) with body (NULL: none). Returns the HTTP
 * status (>= 100) and, for a JSON answer, the parsed body in *ret_body (may
 * be NULL; json NULL when there is none). A status that is not 2xx is not an
 * error here, except 401 and 403 (the token) and 406 (the microversion),
 * which return -EACCES / -EPROTO with a message. Transport failures return
 * -ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH, ... with a message that names
 * the URL. */
int placement_http_request(PlacementHttp *h, const char *method, const char *path, json_object *body,
                           json_object **ret_body);

/* The error title Placement put in a 4xx answer ("errors": [{"code", "detail"}]),
 * or "" when there is none: for messages and to tell a generation conflict
 * ("placement.concurrent_update") from other 409s. */
const char *placement_http_error_code(json_object *body);
const char *placement_http_error_detail(json_object *body);

/* s escaped for a query string (curl_easy_escape). NULL on allocation failure. */
char *placement_http_escape(PlacementHttp *h, const char *s);

/* Requests sent so far: all of them, and those other than GET. */
unsigned placement_http_requests(const PlacementHttp *h);
unsigned placement_http_writes(const PlacementHttp *h);
const char *placement_http_url(const PlacementHttp *h);
