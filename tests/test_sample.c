/* test_sample.c: greedy, temperature, top-k and top-p sampling; seeds; the byte tokenizer. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "linattn.h"

static linattn_sampler *make(int vocab, float t, int k, float p, uint64_t seed)
{
    linattn_sampler *s = NULL;
    cr_assert_eq(linattn_sampler_new(vocab, t, k, p, seed, &s), LINATTN_OK, "%s", linattn_last_error());
    return s;
}

/* Frequencies of each token over n draws. */
static void draw(linattn_sampler *s, const float *logits, int vocab, int n, double *freq)
{
    for (int i = 0; i < vocab; i++)
        freq[i] = 0;
    for (int i = 0; i < n; i++) {
        int tok = -1;
        cr_assert_eq(linattn_sample(s, logits, &tok), LINATTN_OK);
        cr_assert(tok >= 0 && tok < vocab);
        freq[tok] += 1.0 / n;
    }
}

Test(sample, greedy_is_argmax_lowest_index_on_ties)
{
    float logits[5] = {0.1f, 2.0f, -1.0f, 2.0f, 1.9f};
    linattn_sampler *s = make(5, 0.0f, 40, 0.95f, 1);
    for (int i = 0; i < 10; i++) {
        int tok;
        cr_assert_eq(linattn_sample(s, logits, &tok), LINATTN_OK);
        cr_assert_eq(tok, 1);
    }
    linattn_sampler_free(s);
}

/* probs 0.5, 0.3, 0.2 at temperature 1; 20000 draws: the standard error of
 * a frequency is at most sqrt(0.25/20000) = 0.0035, so 0.015 is > 4 sigma. */
static const float probs_logits[3] = {-0.693147f, -1.203973f, -1.609438f};

Test(sample, temperature_one_follows_the_softmax)
{
    linattn_sampler *s = make(3, 1.0f, 0, 1.0f, 7);
    double f[3];
    draw(s, probs_logits, 3, 20000, f);
    cr_assert_float_eq(f[0], 0.5, 0.015);
    cr_assert_float_eq(f[1], 0.3, 0.015);
    cr_assert_float_eq(f[2], 0.2, 0.015);
    linattn_sampler_free(s);
}

Test(sample, top_k_drops_the_tail_and_renormalises)
{
    linattn_sampler *s = make(3, 1.0f, 2, 1.0f, 8);
    double f[3];
    draw(s, probs_logits, 3, 20000, f);
    cr_assert_eq(f[2], 0.0);
    cr_assert_float_eq(f[0], 0.625, 0.015);
    cr_assert_float_eq(f[1], 0.375, 0.015);
    linattn_sampler_free(s);
}

Test(sample, top_p_keeps_the_smallest_set_reaching_p)
{
    double f[3];
    linattn_sampler *s = make(3, 1.0f, 0, 0.7f, 9); /* 0.5 < 0.7 <= 0.8: tokens 0, 1 */
    draw(s, probs_logits, 3, 20000, f);
    cr_assert_eq(f[2], 0.0);
    cr_assert_float_eq(f[0], 0.625, 0.015);
    linattn_sampler_free(s);
    s = make(3, 1.0f, 0, 0.45f, 9); /* 0.5 >= 0.45: token 0 alone */
    draw(s, probs_logits, 3, 2000, f);
    cr_assert_eq(f[1], 0.0);
    cr_assert_eq(f[2], 0.0);
    linattn_sampler_free(s);
}

Test(sample, low_temperature_sharpens)
{
    linattn_sampler *s = make(3, 0.25f, 0, 1.0f, 10);
    double f[3];
    draw(s, probs_logits, 3, 20000, f);
    /* p^4 normalised: 0.0625, 0.0081, 0.0016 -> 0.863, 0.112, 0.022 */
    cr_assert_float_eq(f[0], 0.863, 0.015);
    cr_assert_float_eq(f[1], 0.112, 0.015);
    linattn_sampler_free(s);
}

Test(sample, same_seed_same_draws_and_state_round_trips)
{
    linattn_sampler *a = make(3, 1.0f, 0, 1.0f, 42), *b = make(3, 1.0f, 0, 1.0f, 42);
    int ta[50], tb[50];
    for (int i = 0; i < 50; i++) {
        linattn_sample(a, probs_logits, &ta[i]);
        linattn_sample(b, probs_logits, &tb[i]);
    }
    cr_assert_eq(memcmp(ta, tb, sizeof ta), 0);
    uint64_t st = linattn_sampler_get_state(a);
    for (int i = 0; i < 50; i++)
        linattn_sample(a, probs_logits, &ta[i]);
    linattn_sampler_set_state(b, st);
    for (int i = 0; i < 50; i++)
        linattn_sample(b, probs_logits, &tb[i]);
    cr_assert_eq(memcmp(ta, tb, sizeof ta), 0, "restored state continues identically");
    int differs = 0;
    linattn_sampler *c = make(3, 1.0f, 0, 1.0f, 43);
    for (int i = 0; i < 50; i++) {
        int t;
        linattn_sample(c, probs_logits, &t);
        differs |= t != tb[i];
    }
    cr_assert(differs, "another seed draws another sequence");
    linattn_sampler_free(a);
    linattn_sampler_free(b);
    linattn_sampler_free(c);
}

Test(sample, bad_parameters_and_logits_are_errors)
{
    linattn_sampler *s = NULL;
    cr_assert_eq(linattn_sampler_new(0, 1, 0, 1, 1, &s), LINATTN_ERR_INVALID);
    cr_assert_eq(linattn_sampler_new(3, -1, 0, 1, 1, &s), LINATTN_ERR_INVALID);
    cr_assert_eq(linattn_sampler_new(3, NAN, 0, 1, 1, &s), LINATTN_ERR_INVALID);
    cr_assert_eq(linattn_sampler_new(3, 1, -2, 1, 1, &s), LINATTN_ERR_INVALID);
    cr_assert_eq(linattn_sampler_new(3, 1, 0, 0, 1, &s), LINATTN_ERR_INVALID);
    cr_assert_eq(linattn_sampler_new(3, 1, 0, 1.5f, 1, &s), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "top_p"), "%s", linattn_last_error());
    cr_assert_null(s);
    s = make(3, 1.0f, 0, 1.0f, 1);
    float bad[3] = {0, NAN, 1};
    int tok = -5;
    cr_assert_eq(linattn_sample(s, bad, &tok), LINATTN_ERR_INVALID);
    cr_assert_eq(tok, -5);
    bad[1] = INFINITY;
    cr_assert_eq(linattn_sample(s, bad, &tok), LINATTN_ERR_INVALID);
    linattn_sampler_free(s);
}

Test(tokenizer, bytes_round_trip)
{
    const char text[] = "h\xc3\xa9llo \xe2\x9c\x93\x01\xff";
    int tokens[sizeof text];
    int n = linattn_tokenize(text, sizeof text - 1, tokens);
    cr_assert_eq(n, (int)sizeof text - 1);
    for (int i = 0; i < n; i++) {
        cr_assert(tokens[i] >= 0 && tokens[i] < 256);
        cr_assert_eq((char)linattn_token_byte(tokens[i]), text[i]);
    }
    cr_assert_eq(linattn_token_byte(256), -1);
    cr_assert_eq(linattn_token_byte(-1), -1);
}
