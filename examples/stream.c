/* stream.c: embeds linattn: load a model, feed a prompt, save the stream, resume it, go on. */
#include <stdio.h>
#include <string.h>
#include <linattn.h>

static int check(linattn_status st, const char *what)
{
    if (st != LINATTN_OK)
        fprintf(stderr, "stream: %s: %s\n", what, linattn_last_error());
    return st != LINATTN_OK;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: stream CONFIG STATE_FILE\n");
        return 2;
    }
    linattn_model *model;
    linattn_session *a, *b;
    float logits[256]; /* a byte-level model: vocab 256 */
    int tokens[64], next;
    if (check(linattn_model_load(argv[1], &model), "load"))
        return 1;
    if (linattn_model_config(model)->vocab_size != 256) {
        fprintf(stderr, "stream: %s: expected a byte-level model (vocab 256)\n", argv[1]);
        return 1;
    }
    if (check(linattn_session_new(model, &a), "session") ||
        check(linattn_session_new(model, &b), "session"))
        return 1;
    const char *prompt = "In the beginning";
    int n = linattn_tokenize(prompt, strlen(prompt), tokens);
    /* Prefill, save, resume in another session: the file keeps the logits
     * after the last token, so the resumed stream samples at once. */
    if (check(linattn_session_feed(a, tokens, n, NULL), "feed") ||
        check(linattn_session_save(a, argv[2], NULL, 0), "save") ||
        check(linattn_session_load(b, argv[2], NULL, 0, NULL), "load state"))
        return 1;
    memcpy(logits, linattn_session_logits(b), sizeof logits);
    printf("%s", prompt);
    for (int i = 0; i < 40; i++) { /* greedy decode, one token at a time */
        next = 0;
        for (int t = 1; t < 256; t++)
            next = logits[t] > logits[next] ? t : next;
        putchar(next);
        if (i + 1 < 40 && check(linattn_session_feed(b, &next, 1, logits), "decode"))
            return 1;
    }
    printf("\n%llu tokens, %zu bytes of state\n",
           (unsigned long long)linattn_session_tokens(b), linattn_session_state_bytes(b));
    linattn_session_free(a);
    linattn_session_free(b);
    linattn_model_free(model);
    return 0;
}
