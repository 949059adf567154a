/* test_sample.c: greedy, temperature, top-k, top-p, min-p, repetition penalty and logit bias; seeds and reset; the byte tokenizer. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/mem.h"
#include "../engine/sample.h"
#include "linattn.h"
#include "../engine/cli/cli_config.h"
#include "testutil.h"

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

/* ---- the features of issue 12, against hand-computed distributions -------- */

/* The filtered distribution (linattn_sampler_probs shares the draw's code).
 * The sampler's weights are floats, so 1e-6 is a few float ulps of a
 * probability and far below any effect tested. */
static void probs_of(linattn_sampler *s, const float *logits, int vocab, double *p)
{
    cr_assert_eq(linattn_sampler_probs(s, logits, p), LINATTN_OK, "%s", linattn_last_error());
    double sum = 0;
    for (int i = 0; i < vocab; i++)
        sum += p[i];
    cr_assert_float_eq(sum, 1.0, 1e-12);
}

/* softmax(x / t) over n doubles; x[i] = -INFINITY gives 0. */
static void softmax_ref(const double *x, int n, double t, double *out)
{
    double m = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    for (int i = 0; i < n; i++)
        sum += out[i] = exp((x[i] - m) / t);
    for (int i = 0; i < n; i++)
        out[i] /= sum;
}

static void expect_probs(const double *got, const double *want, int n)
{
    for (int i = 0; i < n; i++)
        cr_expect_float_eq(got[i], want[i], 1e-6, "token %d: %.9f, expected %.9f", i, got[i],
                           want[i]);
}

/* Each draw of a token with probability p is a Bernoulli trial: over n draws
 * its frequency has standard deviation sqrt(p (1 - p) / n); 5 of them (a
 * false alarm about once in 3.5 million per token) with a 1/n floor. */
static void expect_frequencies(const double *freq, const double *p, int vocab, int n)
{
    for (int i = 0; i < vocab; i++) {
        if (p[i] == 0.0) {
            cr_expect_eq(freq[i], 0.0, "token %d has probability 0 but was drawn", i);
            continue;
        }
        double tol = 5 * sqrt(p[i] * (1 - p[i]) / n) + 1.0 / n;
        cr_expect_float_eq(freq[i], p[i], tol, "token %d: frequency %.4f, probability %.4f", i,
                           freq[i], p[i]);
    }
}

static void set_penalty(linattn_sampler *s, float penalty, int last_n)
{
    cr_assert_eq(linattn_sampler_set_repetition_penalty(s, penalty, last_n), LINATTN_OK, "%s",
                 linattn_last_error());
}

static void accept(linattn_sampler *s, int token)
{
    cr_assert_eq(linattn_sampler_accept(s, token), LINATTN_OK, "%s", linattn_last_error());
}

static void bias(linattn_sampler *s, int token, float b)
{
    cr_assert_eq(linattn_sampler_set_logit_bias(s, token, b), LINATTN_OK, "%s",
                 linattn_last_error());
}

Test(sample, repetition_penalty_divides_positive_and_multiplies_negative_logits)
{
    const float logits[4] = {2.0f, -1.0f, 0.5f, 1.0f};
    double p[4], want[4];
    linattn_sampler *s = make(4, 1.0f, 0, 1.0f, 1);
    set_penalty(s, 2.0f, 8);
    accept(s, 0);
    accept(s, 1);
    accept(s, 0); /* twice in the window: still penalised once */
    probs_of(s, logits, 4, p);
    /* 2 / 2 = 1 (lower), -1 * 2 = -2 (lower too); 2 and 3 unseen */
    softmax_ref((const double[]){1.0, -2.0, 0.5, 1.0}, 4, 1.0, want);
    expect_probs(p, want, 4);
    cr_expect_float_eq(p[0], p[3], 1e-9, "2 / 2 ties with the unseen logit 1");

    /* a penalty below 1 favours repeats: 2 / 0.5 = 4, -1 * 0.5 = -0.5 */
    set_penalty(s, 0.5f, 8);
    probs_of(s, logits, 4, p);
    softmax_ref((const double[]){4.0, -0.5, 0.5, 1.0}, 4, 1.0, want);
    expect_probs(p, want, 4);

    /* 1 is off, whatever the window holds */
    set_penalty(s, 1.0f, 8);
    probs_of(s, logits, 4, p);
    softmax_ref((const double[]){2.0, -1.0, 0.5, 1.0}, 4, 1.0, want);
    expect_probs(p, want, 4);
    linattn_sampler_free(s);
}

Test(sample, repetition_penalty_sees_only_the_last_n_accepted)
{
    const float logits[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    double p[4], want[4];
    linattn_sampler *s = make(4, 1.0f, 0, 1.0f, 1);
    set_penalty(s, 2.0f, 2);
    accept(s, 0);
    accept(s, 1);
    accept(s, 2); /* 0 has left the window */
    int recent[4];
    cr_assert_eq(linattn_sampler_recent(s, recent, 4), 2);
    cr_expect(recent[0] == 2 && recent[1] == 1, "newest first: %d %d", recent[0], recent[1]);
    probs_of(s, logits, 4, p);
    softmax_ref((const double[]){1.0, 0.5, 0.5, 1.0}, 4, 1.0, want);
    expect_probs(p, want, 4);

    /* a wider window starts from the tokens kept; a narrower one keeps the newest */
    set_penalty(s, 2.0f, 3);
    accept(s, 3);
    cr_assert_eq(linattn_sampler_recent(s, recent, 4), 3);
    cr_expect(recent[0] == 3 && recent[1] == 2 && recent[2] == 1);
    set_penalty(s, 2.0f, 1);
    cr_assert_eq(linattn_sampler_recent(s, recent, 4), 1);
    cr_expect_eq(recent[0], 3);
    probs_of(s, logits, 4, p);
    softmax_ref((const double[]){1.0, 1.0, 1.0, 0.5}, 4, 1.0, want);
    expect_probs(p, want, 4);
    /* the ring wraps many times and still holds the last one */
    for (int i = 0; i < 10; i++)
        accept(s, i % 4);
    cr_assert_eq(linattn_sampler_recent(s, recent, 4), 1);
    cr_expect_eq(recent[0], 9 % 4);

    /* last_n 0: no window, accept records nothing, the penalty does nothing */
    set_penalty(s, 2.0f, 0);
    accept(s, 0);
    cr_expect_eq(linattn_sampler_recent(s, recent, 4), 0);
    probs_of(s, logits, 4, p);
    expect_probs(p, (const double[]){0.25, 0.25, 0.25, 0.25}, 4);
    linattn_sampler_free(s);
}

Test(sample, repetition_penalty_applies_to_greedy)
{
    const float logits[3] = {2.0f, 1.5f, -3.0f};
    linattn_sampler *s = make(3, 0.0f, 0, 1.0f, 1);
    int tok = -1;
    set_penalty(s, 2.0f, 4);
    cr_assert_eq(linattn_sample(s, logits, &tok), LINATTN_OK);
    cr_expect_eq(tok, 0, "nothing accepted: the argmax");
    accept(s, 0); /* 2 -> 1 < 1.5 */
    cr_assert_eq(linattn_sample(s, logits, &tok), LINATTN_OK);
    cr_expect_eq(tok, 1);
    cr_expect_eq(linattn_sampler_get_state(s), 1, "greedy draws nothing from the generator");
    int recent[4];
    cr_expect_eq(linattn_sampler_recent(s, recent, 4), 1, "sampling does not accept");
    linattn_sampler_free(s);
}

Test(sample, logit_bias_adds_to_the_logit_before_temperature)
{
    const float zeros[4] = {0, 0, 0, 0};
    double p[4];
    linattn_sampler *s = make(4, 1.0f, 0, 1.0f, 5);
    bias(s, 1, (float)log(3.0));
    probs_of(s, zeros, 4, p);
    expect_probs(p, (const double[]){1 / 6.0, 3 / 6.0, 1 / 6.0, 1 / 6.0}, 4);
    bias(s, 2, -INFINITY);
    probs_of(s, zeros, 4, p);
    expect_probs(p, (const double[]){1 / 5.0, 3 / 5.0, 0, 1 / 5.0}, 4);
    cr_expect_eq(p[2], 0.0, "banned: exactly 0");

    /* 40000 draws follow it and never hit the banned token */
    double f[4];
    draw(s, zeros, 4, 40000, f);
    expect_frequencies(f, p, 4, 40000);

    /* temperature 2 divides logit + bias: weights 1, sqrt 3, 0, 1 */
    linattn_sampler *t = make(4, 2.0f, 0, 1.0f, 5);
    bias(t, 1, (float)log(3.0));
    bias(t, 2, -INFINITY);
    probs_of(t, zeros, 4, p);
    double r3 = sqrt(3.0), sum = 2 + r3;
    expect_probs(p, (const double[]){1 / sum, r3 / sum, 0, 1 / sum}, 4);

    /* 0 removes one bias; clear removes them all */
    bias(s, 1, 0.0f);
    probs_of(s, zeros, 4, p);
    expect_probs(p, (const double[]){1 / 3.0, 1 / 3.0, 0, 1 / 3.0}, 4);
    linattn_sampler_clear_logit_bias(s);
    probs_of(s, zeros, 4, p);
    expect_probs(p, (const double[]){0.25, 0.25, 0.25, 0.25}, 4);
    linattn_sampler_free(s);
    linattn_sampler_free(t);
}

Test(sample, banned_tokens_are_never_drawn)
{
    /* the favourite banned, at every setting that could pick it */
    const float logits[5] = {9.0f, 1.0f, 0.5f, 0.0f, 8.5f};
    const float temps[3] = {0.0f, 1.0f, 5.0f};
    for (int t = 0; t < 3; t++) {
        linattn_sampler *s = make(5, temps[t], 1, 0.5f, 11);
        bias(s, 0, -INFINITY);
        for (int i = 0; i < 2000; i++) {
            int tok = -1;
            cr_assert_eq(linattn_sample(s, logits, &tok), LINATTN_OK);
            cr_assert_eq(tok, 4, "temperature %g, top-k 1: the best allowed token, got %d",
                         (double)temps[t], tok);
        }
        linattn_sampler_free(s);
    }
    linattn_sampler *s = make(5, 5.0f, 0, 1.0f, 12);
    bias(s, 0, -INFINITY);
    bias(s, 3, -INFINITY);
    double f[5];
    draw(s, logits, 5, 20000, f);
    cr_expect_eq(f[0], 0.0);
    cr_expect_eq(f[3], 0.0);
    cr_expect_gt(f[1], 0.0, "a flat temperature draws the others");
    linattn_sampler_free(s);
}

Test(sample, all_banned_is_an_error)
{
    const float logits[3] = {1, 2, 3};
    double p[3];
    for (int greedy = 0; greedy < 2; greedy++) {
        linattn_sampler *s = make(3, greedy ? 0.0f : 1.0f, 0, 1.0f, 1);
        for (int i = 0; i < 3; i++)
            bias(s, i, -INFINITY);
        int tok = -7;
        cr_assert_eq(linattn_sample(s, logits, &tok), LINATTN_ERR_INVALID);
        cr_expect_eq(tok, -7, "*token unchanged");
        cr_expect(strstr(linattn_last_error(), "banned"), "%s", linattn_last_error());
        cr_expect_eq(linattn_sampler_probs(s, logits, p), LINATTN_ERR_INVALID);
        bias(s, 1, 0.0f); /* one allowed again: it is the only choice */
        cr_assert_eq(linattn_sample(s, logits, &tok), LINATTN_OK);
        cr_expect_eq(tok, 1);
        linattn_sampler_free(s);
    }
}

/* weights 1, 0.5, 0.25, 0.1 at temperature 1 */
static const float minp_logits[4] = {0.0f, -0.693147181f, -1.386294361f, -2.302585093f};

Test(sample, min_p_keeps_tokens_at_least_min_p_times_the_most_probable)
{
    double p[4], f[4];
    linattn_sampler *s = make(4, 1.0f, 0, 1.0f, 21);
    cr_assert_eq(linattn_sampler_set_min_p(s, 0.3f), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    expect_probs(p, (const double[]){2 / 3.0, 1 / 3.0, 0, 0}, 4);
    draw(s, minp_logits, 4, 40000, f);
    expect_frequencies(f, p, 4, 40000);

    cr_assert_eq(linattn_sampler_set_min_p(s, 0.2f), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    expect_probs(p, (const double[]){1 / 1.75, 0.5 / 1.75, 0.25 / 1.75, 0}, 4);

    /* 1 keeps the most probable only; 0 is off */
    cr_assert_eq(linattn_sampler_set_min_p(s, 1.0f), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    expect_probs(p, (const double[]){1, 0, 0, 0}, 4);
    cr_assert_eq(linattn_sampler_set_min_p(s, 0.0f), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    expect_probs(p, (const double[]){1 / 1.85, 0.5 / 1.85, 0.25 / 1.85, 0.1 / 1.85}, 4);
    linattn_sampler_free(s);
}

Test(sample, min_p_cut_is_exact_at_the_boundary)
{
    /* token 2's weight as the sampler computes it (the max logit is 0 and
     * T = 1, so exp of the logit, rounded to float): min_p equal to it keeps
     * token 2, the next float up drops it */
    float w = (float)exp((double)minp_logits[2]);
    double p[4];
    linattn_sampler *s = make(4, 1.0f, 0, 1.0f, 1);
    cr_assert_eq(linattn_sampler_set_min_p(s, w), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    cr_expect_gt(p[2], 0.0, "p == min_p * p_max is kept");
    cr_expect_eq(p[3], 0.0);
    cr_assert_eq(linattn_sampler_set_min_p(s, nextafterf(w, 1.0f)), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    cr_expect_eq(p[2], 0.0, "just above: dropped");
    cr_expect_gt(p[1], 0.0);
    /* ties with the most probable survive min_p = 1 */
    const float tied[3] = {0.5f, 0.5f, 0.49f};
    cr_assert_eq(linattn_sampler_set_min_p(s, 1.0f), LINATTN_OK);
    linattn_sampler *t = make(3, 1.0f, 0, 1.0f, 1);
    cr_assert_eq(linattn_sampler_set_min_p(t, 1.0f), LINATTN_OK);
    probs_of(t, tied, 3, p);
    expect_probs(p, (const double[]){0.5, 0.5, 0}, 3);
    linattn_sampler_free(s);
    linattn_sampler_free(t);
}

Test(sample, min_p_follows_temperature_and_the_other_cuts)
{
    double p[4];
    /* T = 2: weights sqrt(1, 0.5, 0.25, 0.1) = 1, .707, .5, .316: min-p 0.6
     * keeps two; at T = 1 (weights 1, .5, ...) the same min-p keeps one */
    linattn_sampler *s = make(4, 2.0f, 0, 1.0f, 1);
    cr_assert_eq(linattn_sampler_set_min_p(s, 0.6f), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    double r = sqrt(0.5);
    expect_probs(p, (const double[]){1 / (1 + r), r / (1 + r), 0, 0}, 4);
    linattn_sampler_free(s);
    s = make(4, 1.0f, 0, 1.0f, 1);
    cr_assert_eq(linattn_sampler_set_min_p(s, 0.6f), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    expect_probs(p, (const double[]){1, 0, 0, 0}, 4);
    linattn_sampler_free(s);

    /* top-k 3 keeps weights 1, 0.5, 0.25 (mass 1.75); top-p 0.8 needs 1.4
     * of that: 1 + 0.5 reaches it, tokens 0 and 1; min-p 0.2 would keep
     * token 2 but cannot add back what top-p cut */
    s = make(4, 1.0f, 3, 0.8f, 1);
    cr_assert_eq(linattn_sampler_set_min_p(s, 0.2f), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    expect_probs(p, (const double[]){2 / 3.0, 1 / 3.0, 0, 0}, 4);
    linattn_sampler_free(s);
    /* and top-p's cut is the same as without min-p: the mass it refers to is top-k's */
    s = make(4, 1.0f, 0, 0.9f, 1); /* 1.85 * 0.9 = 1.665: 1.75 reaches it at 3 tokens */
    cr_assert_eq(linattn_sampler_set_min_p(s, 0.2f), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    expect_probs(p, (const double[]){1 / 1.75, 0.5 / 1.75, 0.25 / 1.75, 0}, 4);
    cr_assert_eq(linattn_sampler_set_min_p(s, 0.3f), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    expect_probs(p, (const double[]){2 / 3.0, 1 / 3.0, 0, 0}, 4);
    linattn_sampler_free(s);
    /* where min-p stands matters only through top-p's mass: top-p 0.55 of
     * all four (1.85 * 0.55 = 1.0175) keeps tokens 0 and 1, and min-p 0.2
     * keeps both; min-p first would leave top-p 0.55 of 1.75 = 0.9625,
     * which token 0 alone reaches */
    s = make(4, 1.0f, 0, 0.55f, 1);
    cr_assert_eq(linattn_sampler_set_min_p(s, 0.2f), LINATTN_OK);
    probs_of(s, minp_logits, 4, p);
    expect_probs(p, (const double[]){2 / 3.0, 1 / 3.0, 0, 0}, 4);
    linattn_sampler_free(s);
}

Test(sample, penalty_comes_before_bias)
{
    /* token 0: logit 1, seen, bias -2. Penalty then bias: 1 / 2 - 2 = -1.5.
     * (Bias then penalty would give (1 - 2) * 2 = -4.) Token 1: logit 0. */
    const float logits[2] = {1.0f, 0.0f};
    double p[2], want[2];
    linattn_sampler *s = make(2, 1.0f, 0, 1.0f, 1);
    set_penalty(s, 2.0f, 4);
    accept(s, 0);
    bias(s, 0, -2.0f);
    probs_of(s, logits, 2, p);
    softmax_ref((const double[]){-1.5, 0.0}, 2, 1.0, want);
    expect_probs(p, want, 2);
    /* a bias does not flip the penalty's direction: logit 1 with bias -2 is
     * still divided (it is the model's logit whose sign counts) */
    linattn_sampler_free(s);
}

Test(sample, everything_on_draws_follow_the_distribution)
{
    const float logits[6] = {1.5f, 1.2f, 0.9f, -0.3f, 1.4f, -2.0f};
    linattn_sampler *s = make(6, 0.7f, 5, 0.97f, 99);
    set_penalty(s, 1.5f, 3);
    accept(s, 0);
    accept(s, 5);
    bias(s, 4, -INFINITY);
    bias(s, 3, 1.0f);
    cr_assert_eq(linattn_sampler_set_min_p(s, 0.05f), LINATTN_OK);
    /* by hand: 1.5/1.5 = 1, 1.2, 0.9, -0.3 + 1 = 0.7, banned, -2 * 1.5 = -3,
     * over T = 0.7; top-k 5 keeps all five allowed, top-p 0.97 and min-p
     * 0.05 then drop token 5 (weight exp(-4.2/0.7) = 0.0025) */
    double x[6] = {1.0, 1.2, 0.9, 0.7, -INFINITY, -INFINITY}, want[6], p[6];
    softmax_ref(x, 6, 0.7, want);
    probs_of(s, logits, 6, p);
    expect_probs(p, want, 6);
    double f[6];
    draw(s, logits, 6, 40000, f);
    expect_frequencies(f, p, 6, 40000);
    linattn_sampler_free(s);
}

Test(sample, reset_reproduces_exactly)
{
    const float logits[5] = {0.3f, 0.1f, -0.2f, 0.25f, 0.0f};
    linattn_sampler *s = make(5, 1.2f, 4, 0.95f, 1234);
    set_penalty(s, 1.8f, 3);
    bias(s, 2, 0.4f);
    cr_assert_eq(linattn_sampler_set_min_p(s, 0.1f), LINATTN_OK);
    int first[200], again[200], recent[3];
    for (int run = 0; run < 2; run++) {
        int *out = run ? again : first;
        accept(s, 3); /* a prompt */
        for (int i = 0; i < 200; i++) {
            cr_assert_eq(linattn_sample(s, logits, &out[i]), LINATTN_OK);
            accept(s, out[i]);
        }
        linattn_sampler_reset(s);
        cr_assert_eq(linattn_sampler_get_state(s), 1234, "the generator is back at the seed");
        cr_assert_eq(linattn_sampler_recent(s, recent, 3), 0, "the window is empty");
    }
    cr_assert_eq(memcmp(first, again, sizeof first), 0, "the re-run differs");
    /* reset goes back to the seed even after set_state */
    linattn_sampler_set_state(s, 77);
    linattn_sampler_reset(s);
    accept(s, 3);
    int tok;
    cr_assert_eq(linattn_sample(s, logits, &tok), LINATTN_OK);
    cr_expect_eq(tok, first[0]);
    linattn_sampler_free(s);
}

Test(sample, window_round_trips_through_recent_and_accept)
{
    /* how a host saves the window: recent (newest first), then accept in
     * reverse on a fresh sampler; both then sample alike */
    const float logits[4] = {0.5f, 0.4f, 0.3f, 0.2f};
    linattn_sampler *a = make(4, 1.0f, 0, 1.0f, 5), *b = make(4, 1.0f, 0, 1.0f, 5);
    set_penalty(a, 3.0f, 5);
    set_penalty(b, 3.0f, 5);
    for (int i = 0; i < 13; i++)
        accept(a, (i * 3) % 4);
    int w[5], n = linattn_sampler_recent(a, w, 5);
    cr_assert_eq(n, 5);
    for (int i = n - 1; i >= 0; i--)
        accept(b, w[i]);
    double pa[4], pb[4];
    probs_of(a, logits, 4, pa);
    probs_of(b, logits, 4, pb);
    cr_assert_eq(memcmp(pa, pb, sizeof pa), 0);
    /* a short buffer gets the newest */
    int w2[2];
    cr_assert_eq(linattn_sampler_recent(a, w2, 2), 2);
    cr_expect(w2[0] == w[0] && w2[1] == w[1]);
    linattn_sampler_free(a);
    linattn_sampler_free(b);
}

/* The message of the last error contains each of the strings. */
static void expect_message(const char *a, const char *b)
{
    const char *m = linattn_last_error();
    cr_expect(strstr(m, a) && strstr(m, b), "'%s' lacks '%s' or '%s'", m, a, b);
}

Test(sample, new_parameters_are_validated_and_named)
{
    const float logits[3] = {1.0f, 0.0f, -1.0f};
    double before[3], after[3];
    linattn_sampler *s = make(3, 1.0f, 0, 1.0f, 1);
    set_penalty(s, 2.0f, 4);
    accept(s, 0);
    probs_of(s, logits, 3, before);

    const float bad_penalty[] = {0.0f, -1.0f, NAN, INFINITY};
    const char *bad_penalty_text[] = {"repeat_penalty 0", "repeat_penalty -1", "repeat_penalty nan",
                                      "repeat_penalty inf"};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(linattn_sampler_set_repetition_penalty(s, bad_penalty[i], 4),
                     LINATTN_ERR_INVALID);
        expect_message("sampler: ", bad_penalty_text[i]);
    }
    cr_expect_eq(linattn_sampler_set_repetition_penalty(s, 1.5f, -1), LINATTN_ERR_INVALID);
    expect_message("repeat_last_n -1", "0..1048576");
    cr_expect_eq(linattn_sampler_set_repetition_penalty(s, 1.5f, LINATTN_MAX_REPEAT_LAST_N + 1),
                 LINATTN_ERR_INVALID);
    expect_message("repeat_last_n 1048577", "0..1048576");

    const float bad_min_p[] = {-0.1f, 1.5f, NAN};
    const char *bad_min_p_text[] = {"min_p -0.1", "min_p 1.5", "min_p nan"};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(linattn_sampler_set_min_p(s, bad_min_p[i]), LINATTN_ERR_INVALID);
        expect_message(bad_min_p_text[i], "[0, 1]");
    }

    cr_expect_eq(linattn_sampler_set_logit_bias(s, -1, 1.0f), LINATTN_ERR_INVALID);
    expect_message("token -1", "outside the vocabulary (0..2)");
    cr_expect_eq(linattn_sampler_set_logit_bias(s, 3, 1.0f), LINATTN_ERR_INVALID);
    expect_message("token 3", "outside the vocabulary (0..2)");
    cr_expect_eq(linattn_sampler_set_logit_bias(s, 1, INFINITY), LINATTN_ERR_INVALID);
    expect_message("logit bias inf for token 1", "finite or -inf");
    cr_expect_eq(linattn_sampler_set_logit_bias(s, 1, NAN), LINATTN_ERR_INVALID);
    expect_message("logit bias nan", "token 1");

    cr_expect_eq(linattn_sampler_accept(s, 3), LINATTN_ERR_INVALID);
    expect_message("accepted token 3", "(0..2)");
    cr_expect_eq(linattn_sampler_accept(s, -2), LINATTN_ERR_INVALID);
    expect_message("accepted token -2", "(0..2)");

    cr_expect_eq(linattn_sampler_set_repetition_penalty(NULL, 1, 1), LINATTN_ERR_INVALID);
    cr_expect_eq(linattn_sampler_set_min_p(NULL, 0), LINATTN_ERR_INVALID);
    cr_expect_eq(linattn_sampler_set_logit_bias(NULL, 0, 0), LINATTN_ERR_INVALID);
    cr_expect_eq(linattn_sampler_accept(NULL, 0), LINATTN_ERR_INVALID);

    /* none of that changed the sampler */
    probs_of(s, logits, 3, after);
    cr_expect_eq(memcmp(before, after, sizeof before), 0, "a refused setting changed the sampler");
    int recent[4];
    cr_expect_eq(linattn_sampler_recent(s, recent, 4), 1);
    linattn_sampler_free(s);
}

Test(sample, allocation_failures_leave_the_sampler_unchanged)
{
    const float logits[3] = {1.0f, 0.0f, -1.0f};
    double before[3], after[3];
    linattn_sampler *s = make(3, 1.0f, 0, 1.0f, 1);
    set_penalty(s, 2.0f, 4);
    accept(s, 0);
    probs_of(s, logits, 3, before);
    long live = linattn_test_alloc_live();
    linattn_test_fail_alloc(0);
    cr_expect_eq(linattn_sampler_set_repetition_penalty(s, 3.0f, 8), LINATTN_ERR_NOMEM);
    linattn_test_fail_alloc(0);
    cr_expect_eq(linattn_sampler_set_logit_bias(s, 1, 5.0f), LINATTN_ERR_NOMEM);
    linattn_test_fail_alloc(-1);
    cr_expect_eq(linattn_test_alloc_live(), live, "a failed setting leaked");
    probs_of(s, logits, 3, after);
    cr_expect_eq(memcmp(before, after, sizeof before), 0);
    /* accepting and sampling allocate nothing */
    bias(s, 2, 1.0f);
    long made = linattn_test_alloc_count();
    for (int i = 0; i < 100; i++) {
        int tok;
        cr_assert_eq(linattn_sample(s, logits, &tok), LINATTN_OK);
        accept(s, tok);
    }
    cr_expect_eq(linattn_test_alloc_count(), made);
    linattn_sampler_free(s);
}

/* ---- [generate] repeat_penalty, repeat_last_n, min_p ------------------------ */

TestSuite(sample_config, .init = tu_make_dir, .fini = tu_remove_dir);

static linattn_config cfg;
static cli_generate gcfg; /* the CLI's [generate] (cli_config.c) */
static cli_attention acfg;

static linattn_status load_text(const char *text)
{
    const char *path = tu_path("cfg.ini");
    tu_write_text(path, text);
    return cli_config_load(path, &cfg, &gcfg, &acfg);
}

Test(sample_config, keys_and_defaults)
{
    cr_assert_eq(load_text("[generate]\nseed = 1\n"), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(gcfg.repeat_penalty, 1.0f, "off by default");
    cr_expect_eq(gcfg.repeat_last_n, 64);
    cr_expect_eq(gcfg.min_p, 0.0f, "off by default");
    cr_assert_eq(load_text("[generate]\nrepeat_penalty = 1.3\nrepeat_last_n = 0\nmin_p = 0.05\n"),
                 LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(gcfg.repeat_penalty, 1.3f);
    cr_expect_eq(gcfg.repeat_last_n, 0);
    cr_expect_eq(gcfg.min_p, 0.05f);
    cr_assert_eq(load_text("[generate]\nrepeat_penalty = 0.5\nrepeat_last_n = 1048576\nmin_p = 1\n"),
                 LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(gcfg.repeat_last_n, LINATTN_MAX_REPEAT_LAST_N);
}

/* "cfg.ini:LINE: [generate] key 'KEY'" and the why. */
static void expect_bad(const char *text, linattn_status status, const char *where, const char *why)
{
    linattn_config before = cfg;
    cr_assert_eq(load_text(text), status, "%s: %s", text, linattn_last_error());
    const char *m = linattn_last_error();
    cr_expect(strstr(m, where) && strstr(m, why), "'%s' lacks '%s' or '%s'", m, where, why);
    cr_expect_eq(memcmp(&before, &cfg, sizeof cfg), 0, "a failed load changed the config");
}

Test(sample_config, bad_values_name_file_line_and_key)
{
    linattn_config_defaults(&cfg);
    const char *pen = "cfg.ini:3: [generate] key 'repeat_penalty'";
    expect_bad("[generate]\nseed = 1\nrepeat_penalty = 0\n", LINATTN_ERR_INVALID, pen,
               "expected a finite number > 0 (1: off), got 0");
    expect_bad("[generate]\nseed = 1\nrepeat_penalty = -1.5\n", LINATTN_ERR_INVALID, pen, "got -1.5");
    expect_bad("[generate]\nseed = 1\nrepeat_penalty = high\n", LINATTN_ERR_INVALID, pen,
               "expected a decimal number");
    expect_bad("[generate]\nseed = 1\nrepeat_penalty = 1e39\n", LINATTN_ERR_INVALID, pen,
               "out of range");
    const char *last = "cfg.ini:2: [generate] key 'repeat_last_n'";
    expect_bad("[generate]\nrepeat_last_n = -1\n", LINATTN_ERR_INVALID, last,
               "-1 is out of range (0..1048576)");
    expect_bad("[generate]\nrepeat_last_n = 1048577\n", LINATTN_ERR_INVALID, last,
               "1048577 is out of range");
    expect_bad("[generate]\nrepeat_last_n = 6.4\n", LINATTN_ERR_INVALID, last,
               "expected an integer");
    const char *minp = "cfg.ini:2: [generate] key 'min_p'";
    expect_bad("[generate]\nmin_p = 1.5\n", LINATTN_ERR_INVALID, minp,
               "expected 0 <= min_p <= 1, got 1.5");
    expect_bad("[generate]\nmin_p = -0.1\n", LINATTN_ERR_INVALID, minp, "got -0.1");
    expect_bad("[generate]\nmin_p = 0.1\nmin_p = 0.2\n", LINATTN_ERR_FORMAT,
               "cfg.ini:3: [generate] key 'min_p'", "duplicate key (first set at line 2)");
    /* the keys belong to [generate] only */
    expect_bad("[runtime]\nmin_p = 0.1\n", LINATTN_ERR_FORMAT, "[runtime] key 'min_p'",
               "unknown key");
}

Test(sample_config, values_from_flags_are_checked_too)
{
    cli_generate c;
    cli_attention a;
    cli_config_defaults(&c, &a);
    c.repeat_penalty = NAN;
    cr_expect_eq(cli_config_check(&c, &a), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "key 'repeat_penalty'"), "%s", linattn_last_error());
    cli_config_defaults(&c, &a);
    c.repeat_last_n = -3;
    cr_expect_eq(cli_config_check(&c, &a), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "key 'repeat_last_n'"), "%s", linattn_last_error());
    cli_config_defaults(&c, &a);
    c.min_p = NAN;
    cr_expect_eq(cli_config_check(&c, &a), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "key 'min_p'"), "%s", linattn_last_error());
    cli_config_defaults(&c, &a);
    cr_expect_eq(cli_config_check(&c, &a), LINATTN_OK, "%s", linattn_last_error());
}

/* ---- linattn generate: the flags, the window in saved streams ------------- */

#define TINY "tiny-linear-pre-ln-gelu-sincos.ini"

TestSuite(sample_cli, .init = tu_make_dir, .fini = tu_remove_dir);

/* generate TINY --prompt Hello --tokens N, then the extra arguments (NULL-ended). */
static tu_run_result gen(const char *n, ...)
{
    const char *args[32] = {"generate", tu_data(TINY), "--prompt", "Hello", "--tokens", n};
    int k = 6;
    va_list ap;
    va_start(ap, n);
    for (const char *a; (a = va_arg(ap, const char *));)
        args[k++] = a;
    va_end(ap);
    args[k] = NULL;
    cr_assert_lt(k, 32);
    tu_run_result r = tu_run_args(args);
    tu_assert_ok(&r);
    cr_assert_geq(r.out_len, 6, "the prompt and a newline at least");
    return r;
}

static int same_out(const tu_run_result *a, const tu_run_result *b)
{
    return a->out_len == b->out_len && !memcmp(a->out, b->out, a->out_len);
}

Test(sample_cli, logit_bias_bans_and_forces_bytes)
{
    /* the byte the sampled text uses most, banned: gone, and only it */
    tu_run_result a = gen("200", "--seed", "3", "--temperature", "0.9", NULL);
    int count[256] = {0}, top = 0;
    for (size_t i = 5; i + 1 < a.out_len; i++)
        count[(unsigned char)a.out[i]]++;
    for (int b = 1; b < 256; b++)
        top = count[b] > count[top] ? b : top;
    cr_assert_geq(count[top], 5, "byte %d only %d times", top, count[top]);
    char ban[16];
    snprintf(ban, sizeof ban, "%d=-inf", top);
    tu_run_result b = gen("200", "--seed", "3", "--temperature", "0.9", "--logit-bias", ban, NULL);
    cr_assert_eq(b.out_len, a.out_len);
    for (size_t i = 5; i + 1 < b.out_len; i++)
        cr_assert_neq((unsigned char)b.out[i], top, "banned byte %d at %zu", top, i);
    /* a large bias forces a byte, at any temperature */
    tu_run_result c = gen("50", "--seed", "3", "--temperature", "2", "--logit-bias", "65=1000",
                          "--logit-bias", ban, NULL);
    cr_assert_eq(c.out_len, 5 + 50 + 1);
    for (size_t i = 5; i < 55; i++)
        cr_assert_eq(c.out[i], 'A');
    tu_run_free(&a);
    tu_run_free(&b);
    tu_run_free(&c);
}

Test(sample_cli, min_p_one_is_greedy_and_penalty_one_is_off)
{
    /* min-p 1 keeps only the most probable token (ties aside): greedy text
     * at any temperature and seed */
    tu_run_result greedy = gen("60", "--temperature", "0", NULL);
    tu_run_result minp = gen("60", "--temperature", "1.5", "--seed", "9", "--min-p", "1", NULL);
    cr_assert(same_out(&greedy, &minp), "min-p 1 wrote other text than greedy");
    tu_run_result off = gen("60", "--temperature", "0", "--repeat-penalty", "1", NULL);
    cr_assert(same_out(&greedy, &off), "penalty 1 changed the text");
    /* the tiny model's greedy text loops; a penalty breaks the loop */
    tu_run_result pen = gen("60", "--temperature", "0", "--repeat-penalty", "1.5", NULL);
    cr_assert(!same_out(&greedy, &pen), "penalty 1.5 changed nothing");
    tu_run_result none = gen("60", "--temperature", "0", "--repeat-penalty", "1.5",
                             "--repeat-last-n", "0", NULL);
    cr_assert(same_out(&greedy, &none), "an empty window still penalised");
    tu_run_free(&greedy);
    tu_run_free(&minp);
    tu_run_free(&off);
    tu_run_free(&pen);
    tu_run_free(&none);
}

/* The first greedy byte after "Hello,<" is ','; only a window that reaches
 * back to the prompt's ',' can penalise it. */
static char first_byte(const char *last_n)
{
    tu_run_result r = tu_run("generate", tu_data(TINY), "--prompt", "Hello,<", "--tokens", "1",
                             "--temperature", "0", "--repeat-penalty", "1000000",
                             "--repeat-last-n", last_n, NULL);
    tu_assert_ok(&r);
    cr_assert_eq(r.out_len, 9);
    char c = r.out[7];
    tu_run_free(&r);
    return c;
}

Test(sample_cli, the_prompt_enters_the_window)
{
    cr_assert_eq(first_byte("0"), ',', "no window: the greedy byte");
    cr_assert_eq(first_byte("1"), ',', "a window of '<' alone");
    cr_assert_neq(first_byte("2"), ',', "a window of ',<' penalises ','");
}

/* N tokens saved, N more resumed == one 2N-token run, with every sampler feature on. */
Test(sample_cli, resume_keeps_the_window)
{
    const char *state = tu_path("s.state");
    tu_run_result whole = gen("60", "--seed", "5", "--temperature", "0.9", "--repeat-penalty",
                              "3", "--repeat-last-n", "16", "--min-p", "0.02", "--logit-bias",
                              "44=-2", NULL);
    tu_run_result a = gen("30", "--seed", "5", "--temperature", "0.9", "--repeat-penalty", "3",
                          "--repeat-last-n", "16", "--min-p", "0.02", "--logit-bias", "44=-2",
                          "--save-state", state, NULL);
    tu_run_result b = tu_run("generate", tu_data(TINY), "--tokens", "30", "--temperature", "0.9",
                             "--repeat-penalty", "3", "--repeat-last-n", "16", "--min-p", "0.02",
                             "--logit-bias", "44=-2", "--load-state", state, NULL);
    tu_assert_ok(&b);
    cr_assert_eq(whole.out_len, 5 + 60 + 1);
    cr_assert_eq(b.out_len, 31);
    cr_assert(!memcmp(a.out, whole.out, 35), "the first half differs");
    cr_assert(!memcmp(b.out, whole.out + 35, 30), "the resumed half differs from one run");
    tu_run_free(&whole);
    tu_run_free(&a);
    tu_run_free(&b);
}

/* A state file from before the window (16 bytes of extra, the window count
 * 0) still resumes. */
Test(sample_cli, state_files_without_a_window_still_load)
{
    linattn_model *m;
    linattn_session *sess;
    cr_assert_eq(linattn_model_load(tu_data(TINY), &m), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(linattn_session_new(m, &sess), LINATTN_OK);
    int toks[5];
    float logits[256];
    int n = linattn_tokenize("Hello", 5, toks);
    cr_assert_eq(linattn_session_feed(sess, toks, n - 1, logits), LINATTN_OK);
    struct {
        uint64_t state;
        int32_t pending, reserved;
    } old = {42, 'o', 0}; /* 'o' waits to be fed */
    const char *path = tu_path("old.state");
    cr_assert_eq(linattn_session_save(sess, path, &old, sizeof old), LINATTN_OK);
    linattn_session_free(sess);
    linattn_model_free(m);
    tu_run_result r = tu_run("generate", tu_data(TINY), "--tokens", "5", "--repeat-penalty", "1.2",
                             "--load-state", path, NULL);
    tu_assert_ok(&r);
    cr_assert_eq(r.out_len, 6);
    tu_run_free(&r);
}

static void expect_fail(const char *want, ...)
{
    const char *args[32] = {"generate", tu_data(TINY), "--prompt", "Hi", "--tokens", "3"};
    int k = 6;
    va_list ap;
    va_start(ap, want);
    for (const char *a; (a = va_arg(ap, const char *));)
        args[k++] = a;
    va_end(ap);
    args[k] = NULL;
    tu_run_result r = tu_run_args(args);
    cr_expect_eq(r.status, 1, "want '%s', got status %d", want, r.status);
    cr_expect_eq(tu_count_lines(r.err, r.err_len), 1, "one line: %s", r.err);
    cr_expect(!strncmp(r.err, "linattn: ", 9) && strstr(r.err, want), "want '%s' in: %s", want,
              r.err);
    tu_run_free(&r);
}

Test(sample_cli, bad_flags_are_one_line_errors)
{
    expect_fail("--repeat-penalty: expected a number in [1e-09, 1e+09], got '0'",
                "--repeat-penalty", "0", NULL);
    expect_fail("--repeat-penalty", "--repeat-penalty", "1.5x", NULL);
    expect_fail("--repeat-last-n: expected an integer in [0, 1048576], got '-1'",
                "--repeat-last-n", "-1", NULL);
    expect_fail("--min-p: expected a number in [0, 1], got '1.5'", "--min-p", "1.5", NULL);
    expect_fail("--logit-bias: expected TOKEN=BIAS, got '65'", "--logit-bias", "65", NULL);
    expect_fail("--logit-bias: expected TOKEN=BIAS, got '=1'", "--logit-bias", "=1", NULL);
    expect_fail("--logit-bias TOKEN: expected an integer", "--logit-bias", "x=1", NULL);
    expect_fail("--logit-bias TOKEN: expected an integer", "--logit-bias", "-1=1", NULL);
    expect_fail("--logit-bias BIAS (a number or -inf): expected a number", "--logit-bias",
                "65=inf", NULL);
    expect_fail("--logit-bias BIAS", "--logit-bias", "65=", NULL);
    expect_fail("--logit-bias BIAS", "--logit-bias", "65=nan", NULL);
    expect_fail("logit-bias: sampler: logit bias token 256 is outside the vocabulary (0..255)",
                "--logit-bias", "256=-1", NULL);
}

Test(sample_cli, every_token_banned_is_an_error)
{
    /* more arguments than tu_run_args takes: argv by hand */
    static char bans[256][24];
    char *argv[520] = {"linattn", "generate", (char *)tu_data(TINY), "--prompt", "Hi", "--tokens",
                       "3"};
    int k = 7;
    for (int t = 0; t < 256; t++) {
        snprintf(bans[t], sizeof bans[t], "--logit-bias=%d=-inf", t);
        argv[k++] = bans[t];
    }
    argv[k] = NULL;
    const char *exe = getenv("LINATTN_EXE");
    cr_assert_not_null(exe);
    tu_run_result r = tu_run_argv(exe, argv);
    cr_expect_eq(r.status, 1, "status %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "every token is banned"), "%s", r.err);
    tu_run_free(&r);
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

/* ---- selection instead of sorting (issue 13) ------------------------------- */

typedef struct ref_cand {
    double p;
    int token;
} ref_cand;

static int ref_desc(const void *a, const void *b)
{
    const ref_cand *x = a, *y = b;
    if (x->p != y->p)
        return x->p < y->p ? 1 : -1;
    return (x->token > y->token) - (x->token < y->token);
}

/* The cuts as linattn.h words them, on a full sort in doubles: the
 * reference the selection-based sampler must match. */
static void cuts_ref(const float *logits, int n, double t, int top_k, double top_p, double min_p,
                     double *out)
{
    ref_cand *c = malloc((size_t)n * sizeof *c);
    cr_assert(c);
    double m = -INFINITY;
    for (int i = 0; i < n; i++)
        m = logits[i] > m ? logits[i] : m;
    for (int i = 0; i < n; i++)
        c[i] = (ref_cand){exp(((double)logits[i] - m) / t), i};
    qsort(c, (size_t)n, sizeof *c, ref_desc);
    int k = top_k > 0 && top_k < n ? top_k : n;
    double kept = 0, cum = 0;
    for (int i = 0; i < k; i++)
        kept += c[i].p;
    for (int i = 0; i < k && top_p < 1; i++) {
        cum += c[i].p;
        if (cum >= top_p * kept) {
            k = i + 1;
            break;
        }
    }
    int j = 0;
    while (j < k && c[j].p >= min_p * c[0].p)
        j++;
    k = j;
    double sum = 0;
    for (int i = 0; i < k; i++)
        sum += c[i].p;
    for (int i = 0; i < n; i++)
        out[i] = 0;
    for (int i = 0; i < k; i++)
        out[c[i].token] = c[i].p / sum;
    free(c);
}

/* 300 random cases over vocab 2000 (tails heavy and light, ties by
 * repeated logits, every cut alone and together): the kept set is the
 * reference's and the probabilities agree to 1e-6 (float weights from a
 * 1-ulp exp against double). A boundary decided by rounding would be
 * one token in millions of cases; the seeds are fixed. */
Test(sample, selection_keeps_the_sets_a_full_sort_keeps)
{
    enum { V = 2000 };
    static float logits[V];
    static double got[V], want[V];
    uint64_t r = 42;
    for (int it = 0; it < 300; it++) {
        double scale = 0.5 + (it % 7);
        for (int i = 0; i < V; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(r >> 11) * 0x1.0p-53;
            logits[i] = (float)(scale * (u - 0.5));
            if (it % 5 == 0 && i % 3 == 0)
                logits[i] = logits[i - i % 9]; /* ties */
        }
        int top_k = (int[]){0, 1, 40, 500, 1999, 2000, 5000}[it % 7];
        float top_p = (float[]){1.0f, 0.95f, 0.5f, 0.1f, 0.999f}[it % 5];
        float min_p = (float[]){0.0f, 0.05f, 0.5f}[it % 3];
        float t = (float[]){0.8f, 1.0f, 0.3f, 2.0f}[it % 4];
        linattn_sampler *s = make(V, t, top_k, top_p, 1);
        cr_assert_eq(linattn_sampler_set_min_p(s, min_p), LINATTN_OK);
        cuts_ref(logits, V, t, top_k, top_p, min_p, want);
        probs_of(s, logits, V, got);
        int differ = 0;
        for (int i = 0; i < V; i++)
            differ += (got[i] > 0) != (want[i] > 0) || fabs(got[i] - want[i]) > 1e-6;
        cr_assert_eq(differ, 0, "case %d (k %d, p %g, min-p %g, T %g): %d tokens differ", it,
                     top_k, (double)top_p, (double)min_p, (double)t, differ);
        linattn_sampler_free(s);
    }
}
