/* fuzz_serve.c: libFuzzer target: `linattn serve`'s request body readers (serve_request.c) on any bytes: JSON parsed, then read as a completion, a chat and a prompt. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cJSON.h>

#include "../../engine/cli/cli_config.h"
#include "../../engine/cli/serve.h"
#include "linattn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static linattn_tokenizer *tokz;
    static cli_generate gen = {"", 200, 0.8f, 40, 0.95f, 42, 1.0f, 64, 0.0f};
    if (!tokz && linattn_tokenizer_load("bytes", &tokz) != LINATTN_OK)
        return 0;
    /* the first byte picks the chat format */
    srv_request rq = {256, tokz, &gen, size ? data[0] % 8 : 0, 1000000000};
    cJSON *o = cJSON_ParseWithLength((const char *)data, size);
    if (!o)
        return 0;
    char msg[512];
    srv_params p;
    for (int chat = 0; chat < 2; chat++)
        (void)srv_read_params(&rq, o, chat, &p, msg, sizeof msg);
    int *ids = NULL, n = 0;
    if (srv_read_prompt(&rq, cJSON_GetObjectItemCaseSensitive(o, "prompt"), 1, &ids, &n, msg,
                        sizeof msg) == 0)
        free(ids);
    ids = NULL;
    if (srv_read_messages(&rq, cJSON_GetObjectItemCaseSensitive(o, "messages"), 1, &ids, &n, msg,
                          sizeof msg) == 0)
        free(ids);
    cJSON_Delete(o);
    return 0;
}
