/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* HTTP to Placement with libcurl (placement-http.h). */
#include <curl/curl.h>

#include "placement.h"
#include "placement-http.h"

/* Placement's answers for a host of 256 parents are a few hundred KiB at most. */
#define BODY_MAX (16u << 20)

struct PlacementHttp {
        CURL *curl;
        char *url;         /* without a trailing '/' */
        char *token;
        unsigned timeout;
        unsigned requests, writes;
        char errbuf[CURL_ERROR_SIZE];
};

typedef struct Buffer {
        char *data;
        size_t size;
        bool too_big;
} Buffer;

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *userdata) {
        Buffer *b = userdata;
        size_t n = size * nmemb;
        char *d;

        if (b->size + n > BODY_MAX) {
                b->too_big = true;
                return 0;
        }
        d = realloc(b->data, b->size + n + 1);
        if (!d)
                return 0;
        memcpy(d + b->size, ptr, n);
        b->size += n;
        d[b->size] = '\0';
        b->data = d;
        return n;
}

int placement_http_new(const char *url, const char *token, unsigned timeout, PlacementHttp **ret) {
        PlacementHttp *h;
        size_t l;

        if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
                return error_set(-EINVAL, "'%s' is not an http:// or https:// URL", url);
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return error_set(-EIO, "cannot initialise libcurl");
        h = calloc(1, sizeof *h);
        if (!h) {
                curl_global_cleanup();
                return -ENOMEM;
        }
        h->url = strdup(url);
        h->token = token ? strdup(token) : NULL;
        h->curl = curl_easy_init();
        if (!h->url || (token && !h->token) || !h->curl) {
                placement_http_free(h);
                return -ENOMEM;
        }
        l = strlen(h->url);
        while (l > 0 && h->url[l - 1] == '/')
                h->url[--l] = '\0';
        h->timeout = timeout;
        *ret = h;
        return 0;
}

void placement_http_free(PlacementHttp *h) {
        if (!h)
                return;
        if (h->curl)
                curl_easy_cleanup(h->curl);
        free(h->url);
        if (h->token)
                explicit_bzero(h->token, strlen(h->token));
        free(h->token);
        free(h);
        curl_global_cleanup();
}

unsigned placement_http_requests(const PlacementHttp *h) {
        return h->requests;
}

unsigned placement_http_writes(const PlacementHttp *h) {
        return h->writes;
}

const char *placement_http_url(const PlacementHttp *h) {
        return h->url;
}

char *placement_http_escape(PlacementHttp *h, const char *s) {
        char *e = curl_easy_escape(h->curl, s, 0);
        char *r;

        if (!e)
                return NULL;
        r = strdup(e);
        curl_free(e);
        return r;
}

static int curl_errno(CURLcode c) {
        switch (c) {
        case CURLE_OPERATION_TIMEDOUT:
                return -ETIMEDOUT;
        case CURLE_COULDNT_CONNECT:
                return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return -EHOSTUNREACH;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        default:
                return -EIO;
        }
}

static json_object *error_entry(json_object *body) {
        json_object *errors, *e;

        if (!body || !json_object_object_get_ex(body, "errors", &errors) ||
            !json_object_is_type(errors, json_type_array) || json_object_array_length(errors) < 1)
                return NULL;
        e = json_object_array_get_idx(errors, 0);
        return json_object_is_type(e, json_type_object) ? e : NULL;
}

static const char *error_field(json_object *body, const char *key) {
        json_object *e = error_entry(body), *v;

        if (!e || !json_object_object_get_ex(e, key, &v) || !json_object_is_type(v, json_type_string))
                return "";
        return json_object_get_string(v);
}

const char *placement_http_error_code(json_object *body) {
        return error_field(body, "code");
}

const char *placement_http_error_detail(json_object *body) {
        const char *d = error_field(body, "detail");

        return *d ? d : error_field(body, "title");
}

/* A detail on one line: Placement's have newlines in them. */
static char *one_line(const char *s) {
        char *r = strdup(s), *w;

        if (!r)
                return NULL;
        w = r;
        for (const char *c = r; *c; c++) {
                if (*c == '\n' || *c == '\r' || *c == '\t') {
                        if (w > r && w[-1] != ' ')
                                *w++ = ' ';
                        continue;
                }
                *w++ = *c;
        }
        while (w > r && w[-1] == ' ')
                w--;
        *w = '\0';
        return r;
}

/* The request's headers: the microversion, JSON, and the token when there
 * is one, in *token_header, which the caller frees after the request. */
static int request_headers(const PlacementHttp *h, bool has_body, char **token_header, struct curl_slist **ret) {
        struct curl_slist *headers = NULL;

        headers = curl_slist_append(headers, "OpenStack-API-Version: placement " PLACEMENT_MICROVERSION);
        headers = curl_slist_append(headers, "Accept: application/json");
        if (has_body)
                headers = curl_slist_append(headers, "Content-Type: application/json");
        if (h->token) {
                *token_header = strdup_printf("X-Auth-Token: %s", h->token);
                if (!*token_header) {
                        curl_slist_free_all(headers);
                        return -ENOMEM;
                }
                headers = curl_slist_append(headers, *token_header);
        }
        if (!headers)
                return -ENOMEM;
        *ret = headers;
        return 0;
}

/* Sets up h->curl for one request: its URL, method and headers, where the
 * answer goes, the timeouts, and the body (NULL: none). */
static int request_setup(PlacementHttp *h, const char *method, const char *url, struct curl_slist *headers,
                         json_object *body, Buffer *answer) {
        const char *payload = NULL;

        curl_easy_reset(h->curl);
        curl_easy_setopt(h->curl, CURLOPT_URL, url);
        curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, write_cb);
        curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, answer);
        curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
        curl_easy_setopt(h->curl, CURLOPT_TIMEOUT, (long) h->timeout);
        curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT, (long) (h->timeout < 5 ? h->timeout : 5));
        curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
        if (body) {
                payload = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
                if (!payload)
                        return -ENOMEM;
                curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, payload);
                curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE, (long) strlen(payload));
        }
        return 0;
}

/* The answer's body as JSON: NULL in *ret when there is none or it is not
 * JSON. */
static int answer_parse(const Buffer *answer, json_object **ret) {
        json_object *parsed = NULL;

        if (answer->size > 0) {
                struct json_tokener *tok = json_tokener_new();

                if (!tok)
                        return -ENOMEM;
                parsed = json_tokener_parse_ex(tok, answer->data, (int) answer->size);
                if (json_tokener_get_error(tok) != json_tokener_success) {
                        json_object_put(parsed);
                        parsed = NULL;
                }
                json_tokener_free(tok);
        }
        *ret = parsed;
        return 0;
}

int placement_http_request(PlacementHttp *h, const char *method, const char *path, json_object *body,
                           json_object **ret_body) {
        _cleanup_free_ char *url = NULL, *token_header = NULL;
        struct curl_slist *headers = NULL;
        Buffer answer = { 0 };
        json_object *parsed = NULL;
        long status = 0;
        CURLcode c;
        int r;

        url = strdup_printf("%s%s", h->url, path);
        if (!url)
                return -ENOMEM;
        r = request_headers(h, body != NULL, &token_header, &headers);
        if (r < 0)
                return r;
        r = request_setup(h, method, url, headers, body, &answer);
        if (r < 0) {
                curl_slist_free_all(headers);
                return r;
        }
        h->errbuf[0] = '\0';
        h->requests++;
        if (!streq(method, "GET"))
                h->writes++;
        c = curl_easy_perform(h->curl);
        curl_slist_free_all(headers);
        if (token_header)
                explicit_bzero(token_header, strlen(token_header));
        if (c != CURLE_OK) {
                r = answer.too_big ? -EFBIG : curl_errno(c);
                free(answer.data);
                if (r == -EFBIG)
                        return error_set(r, "Placement at %s answered %s %s with more than %u bytes", h->url, method, path, BODY_MAX);
                return error_set(r, "cannot reach Placement at %s (%s %s): %s", h->url, method, path,
                                 h->errbuf[0] ? h->errbuf : curl_easy_strerror(c));
        }
        curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
        r = answer_parse(&answer, &parsed);
        free(answer.data);
        if (r < 0)
                return r;

        if (status == 401 || status == 403 || status == 406) {
                _cleanup_free_ char *detail = one_line(placement_http_error_detail(parsed));
                r = status == 406 ? -EPROTO : -EACCES;
                json_object_put(parsed);
                if (status == 406)
                        return error_set(r, "Placement at %s does not serve microversion %s (%s %s: %s); mdev-hooks needs Placement 6.0 (Xena) or later",
                                         h->url, PLACEMENT_MICROVERSION, method, path, strempty(detail));
                return error_set(r, "Placement at %s refused the request (%s %s: HTTP %ld%s%s); check --token or [placement] token_file",
                                 h->url, method, path, status, detail && *detail ? ", " : "", strempty(detail));
        }
        if (status >= 200 && status < 300 && answer.size > 0 && !parsed)
                return error_set(-EBADMSG, "Placement at %s answered %s %s with a body that is not JSON", h->url, method, path);
        if (ret_body)
                *ret_body = parsed;
        else
                json_object_put(parsed);
        return (int) status;
}
