/* json.h: the one strict JSON reader every JSON file and request goes through; not installed. */
#ifndef LINATTN_ENGINE_JSON_H
#define LINATTN_ENGINE_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "internal.h"

/* How deep arrays and objects may nest (cJSON's own limit). */
#define JSON_MAX_DEPTH CJSON_NESTING_LIMIT

/* Parses text[len] (NUL bytes included) as exactly one JSON value, more
 * strictly than cJSON alone: only whitespace may follow the value, no
 * object holds a key twice (Python would keep the last, cJSON finds the
 * first: neither is what the writer meant), and every number fits a
 * double. On success *out is the tree (cJSON_Delete). On failure *out is
 * NULL and why[why_size] says what is wrong: where ("near byte N"), which
 * key (its path from the top: model.vocab."x", added_tokens[3]), and why.
 * LINATTN_ERR_FORMAT for bad text, LINATTN_ERR_NOMEM. Time: O(n log n) in
 * the text (each object's keys are sorted once). */
linattn_status json_parse_strict(const char *text, size_t len, cJSON **out, char *why,
                                 size_t why_size);

/* The same, the message recorded as "path: why" (linattn_err); with
 * want_object, a value that is not an object is refused too. */
linattn_status json_parse_file(const char *path, const char *text, size_t len, int want_object,
                               cJSON **out);

#endif
