/* generate.c: embeds linattn with its tokenizer and sampler: a prompt in, sampled text out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linattn.h>

static int fail(const char *what)
{
    fprintf(stderr, "generate: %s: %s\n", what, linattn_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: generate CONFIG PROMPT TOKENS SEED\n");
        return 2;
    }
    const char *prompt = argv[2];
    int count = atoi(argv[3]);
    linattn_model *model;
    if (linattn_model_load(argv[1], &model) != LINATTN_OK)
        return fail("load");
    /* the model's own tokenizer (bytes, llama2.c or Hugging Face) */
    const linattn_tokenizer *tok = linattn_model_tokenizer(model);
    /* logits: the model's vocabulary (a tokenizer may know fewer tokens) */
    const int vocab = linattn_model_config(model)->vocab_size, eos = linattn_tokenizer_eos(tok);
    size_t n;
    int add_bos = linattn_tokenizer_adds_bos(tok);
    if (linattn_tokenizer_encode(tok, prompt, strlen(prompt), add_bos, NULL, 0, &n) != LINATTN_OK)
        return fail("tokenize");
    int *tokens = malloc((n ? n : 1) * sizeof *tokens);
    float *logits = malloc((size_t)vocab * sizeof *logits);
    linattn_session *s;
    linattn_sampler *sampler;
    if (!tokens || !logits ||
        linattn_tokenizer_encode(tok, prompt, strlen(prompt), add_bos, tokens, n, &n) != LINATTN_OK)
        return fail("tokenize");
    /* temperature 0.8, top-k 40, top-p 0.95, the seed given */
    if (linattn_sampler_new(vocab, 0.8f, 40, 0.95f, strtoull(argv[4], NULL, 10), &sampler) !=
            LINATTN_OK ||
        linattn_session_new(model, &s) != LINATTN_OK)
        return fail("setup");
    if (linattn_session_feed(s, tokens, (int)n, logits) != LINATTN_OK)
        return fail("prompt");
    fputs(prompt, stdout);
    int prev = (int)n ? tokens[n - 1] : -1;
    for (int i = 0; i < count; i++) {
        int next;
        if (linattn_sample(sampler, logits, &next) != LINATTN_OK)
            return fail("sample");
        if (next == eos)
            break;
        const char *bytes;
        size_t len;
        /* a token's bytes may end inside a UTF-8 character: written as
         * they come, consecutive tokens join up */
        if (linattn_tokenizer_decode(tok, prev, next, &bytes, &len) != LINATTN_OK)
            return fail("decode");
        fwrite(bytes, 1, len, stdout);
        prev = next;
        if (i + 1 < count && linattn_session_feed(s, &next, 1, logits) != LINATTN_OK)
            return fail("decode step");
    }
    putchar('\n');
    linattn_session_free(s);
    linattn_sampler_free(sampler);
    free(tokens);
    free(logits);
    linattn_model_free(model);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
