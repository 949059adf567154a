/* chat_template.c: the chat formats of the common model families (ChatML, Llama 2, Llama 3, Zephyr, Mistral, Phi-3, Gemma) and our plain one, by name or recognised in a model's Jinja template, rendered in C (no template engine); shared by `linattn chat` and `linattn serve`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"

static const char *const names[] = {
    [CLI_CHAT_PLAIN] = "plain",   [CLI_CHAT_CHATML] = "chatml", [CLI_CHAT_LLAMA2] = "llama2",
    [CLI_CHAT_LLAMA3] = "llama3", [CLI_CHAT_ZEPHYR] = "zephyr", [CLI_CHAT_MISTRAL] = "mistral",
    [CLI_CHAT_PHI3] = "phi3",     [CLI_CHAT_GEMMA] = "gemma",
};
#define N_CHAT ((int)(sizeof names / sizeof names[0]))

const char *cli_chat_name(cli_chat k)
{
    return k >= 0 && (int)k < N_CHAT ? names[k] : "plain";
}

const char *cli_chat_names(void)
{
    return "plain, chatml, llama2, llama3, zephyr, mistral, phi3, gemma";
}

int cli_chat_by_name(const char *name, cli_chat *out)
{
    for (int k = 0; k < N_CHAT; k++)
        if (!strcmp(name, names[k])) {
            *out = (cli_chat)k;
            return 0;
        }
    return -1;
}

cli_chat cli_chat_detect(const char *t)
{
    if (!t)
        return CLI_CHAT_PLAIN;
    if (strstr(t, "<|im_start|>"))
        return CLI_CHAT_CHATML;
    if (strstr(t, "<|start_header_id|>"))
        return CLI_CHAT_LLAMA3;
    if (strstr(t, "<start_of_turn>"))
        return CLI_CHAT_GEMMA;
    if (strstr(t, "<|user|>"))
        return strstr(t, "<|end|>") ? CLI_CHAT_PHI3 : CLI_CHAT_ZEPHYR;
    if (strstr(t, "[INST]"))
        return strstr(t, "<<SYS>>") ? CLI_CHAT_LLAMA2 : CLI_CHAT_MISTRAL;
    return CLI_CHAT_PLAIN;
}

const char *cli_chat_end(cli_chat k)
{
    switch (k) {
    case CLI_CHAT_CHATML: return "<|im_end|>";
    case CLI_CHAT_LLAMA3: return "<|eot_id|>";
    case CLI_CHAT_PHI3: return "<|end|>";
    case CLI_CHAT_GEMMA: return "<end_of_turn>";
    case CLI_CHAT_LLAMA2:
    case CLI_CHAT_ZEPHYR:
    case CLI_CHAT_MISTRAL: return "</s>";
    default: return "\n";
    }
}

typedef struct buf {
    char *p;
    size_t n, cap;
    int failed;
} buf;

static void put(buf *b, const char *s)
{
    size_t l = strlen(s);
    if (b->failed)
        return;
    if (b->n + l + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + l + 1)
            cap *= 2;
        char *g = realloc(b->p, cap);
        if (!g) {
            b->failed = 1;
            return;
        }
        b->p = g;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, l + 1);
    b->n += l;
}

int cli_chat_render(cli_chat k, const cli_chat_msg *m, int n, int first, char **out, size_t *len)
{
    buf b = {0};
    put(&b, ""); /* an empty text, not NULL, when there is nothing */
    /* a system message, for the formats that fold it into the first user turn */
    const char *sys = NULL;
    /* continuing a stream after an answer (which ends with the format's end
     * mark, the newline after it not yet written) */
    if (!first && n > 0 && k != CLI_CHAT_PLAIN && k != CLI_CHAT_LLAMA3 && k != CLI_CHAT_LLAMA2 &&
        k != CLI_CHAT_MISTRAL)
        put(&b, "\n");
    for (int i = 0; i < n; i++) {
        const char *role = m[i].role, *c = m[i].content;
        const int user = !strcmp(role, "user"), system = !strcmp(role, "system");
        switch (k) {
        case CLI_CHAT_PLAIN:
            put(&b, c);
            put(&b, "\n");
            break;
        case CLI_CHAT_CHATML:
            put(&b, "<|im_start|>");
            put(&b, role);
            put(&b, "\n");
            put(&b, c);
            put(&b, "<|im_end|>\n");
            break;
        case CLI_CHAT_LLAMA3:
            put(&b, "<|start_header_id|>");
            put(&b, role);
            put(&b, "<|end_header_id|>\n\n");
            put(&b, c);
            put(&b, "<|eot_id|>");
            break;
        case CLI_CHAT_ZEPHYR:
        case CLI_CHAT_PHI3:
            put(&b, "<|");
            put(&b, role);
            put(&b, "|>\n");
            put(&b, c);
            put(&b, k == CLI_CHAT_PHI3 ? "<|end|>\n" : "</s>\n");
            break;
        case CLI_CHAT_GEMMA: /* no system turn: it opens the first user turn */
            if (system) {
                sys = c;
                break;
            }
            put(&b, "<start_of_turn>");
            put(&b, user ? "user\n" : "model\n");
            if (user && sys) {
                put(&b, sys);
                put(&b, "\n\n");
                sys = NULL;
            }
            put(&b, c);
            put(&b, "<end_of_turn>\n");
            break;
        case CLI_CHAT_LLAMA2:
        case CLI_CHAT_MISTRAL:
            if (system) {
                sys = c;
                break;
            }
            if (user) {
                /* a turn after an answer (its </s>) begins a new sequence */
                if (i > 0 ? !strcmp(m[i - 1].role, "assistant") : !first)
                    put(&b, "<s>");
                put(&b, "[INST] ");
                if (sys && k == CLI_CHAT_LLAMA2) {
                    put(&b, "<<SYS>>\n");
                    put(&b, sys);
                    put(&b, "\n<</SYS>>\n\n");
                } else if (sys) {
                    put(&b, sys);
                    put(&b, "\n\n");
                }
                sys = NULL;
                put(&b, c);
                put(&b, " [/INST]");
            } else {
                put(&b, k == CLI_CHAT_LLAMA2 ? " " : ""); /* Llama 2's: ' ' + answer + ' ' + eos */
                put(&b, c);
                put(&b, k == CLI_CHAT_LLAMA2 ? " </s>" : "</s>");
            }
            break;
        }
    }
    /* the assistant's opening: the model writes the answer next */
    if (n == 0 || strcmp(m[n - 1].role, "assistant")) {
        switch (k) {
        case CLI_CHAT_CHATML: put(&b, "<|im_start|>assistant\n"); break;
        case CLI_CHAT_LLAMA3: put(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n"); break;
        case CLI_CHAT_ZEPHYR:
        case CLI_CHAT_PHI3: put(&b, "<|assistant|>\n"); break;
        case CLI_CHAT_GEMMA: put(&b, "<start_of_turn>model\n"); break;
        default: break; /* plain, [INST]: the answer follows the user's text */
        }
    }
    if (b.failed) {
        free(b.p);
        return -1;
    }
    *out = b.p;
    *len = b.n;
    return 0;
}

int cli_chat_from_tokenizer(const char *tokenizer_json, cli_chat *out)
{
    *out = CLI_CHAT_PLAIN;
    if (!tokenizer_json || !*tokenizer_json)
        return 0;
    char path[4200];
    const char *slash = strrchr(tokenizer_json, '/');
    snprintf(path, sizeof path, "%.*stokenizer_config.json",
             slash ? (int)(slash - tokenizer_json + 1) : 0, tokenizer_json);
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    /* the template's text is all we look at: no JSON parse needed to find
     * its family's marks, but keep to the chat_template value's region */
    char *text = malloc(1 << 20);
    size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!text)
        return 0;
    text[n] = '\0';
    const char *at = strstr(text, "\"chat_template\"");
    if (at)
        *out = cli_chat_detect(at);
    free(text);
    return at != NULL;
}
