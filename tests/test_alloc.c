/* test_alloc.c: every allocation of model load, session creation, save, load (and the rest) made to fail in turn: an error, no crash, no leak. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linattn.h"
#include "../engine/mem.h"
#include "../engine/cli/npy.h"
#include "testutil.h"

TestSuite(alloc, .init = tu_make_dir, .fini = tu_remove_dir);

/* An operation under test: does its work and frees what it made; returns
 * the first failing status. */
typedef linattn_status (*op_fn)(void *ctx);

/* Runs op once to count its allocations, then once per allocation with
 * that one failing: each run must fail (not crash), and leave as many
 * blocks alive as before (nothing leaked on the error path). Returns the
 * count. */
static long sweep(const char *name, op_fn op, void *ctx)
{
    long live0 = linattn_test_alloc_live(), made0 = linattn_test_alloc_count();
    cr_assert_eq(op(ctx), LINATTN_OK, "%s: %s", name, linattn_last_error());
    long n = linattn_test_alloc_count() - made0;
    cr_assert_eq(linattn_test_alloc_live(), live0, "%s leaks when it succeeds", name);
    for (long k = 0; k < n; k++) {
        linattn_test_fail_alloc(k);
        linattn_status st = op(ctx);
        linattn_test_fail_alloc(-1);
        cr_expect_neq(st, LINATTN_OK, "%s: allocation %ld of %ld failed, yet it succeeded", name,
                      k + 1, n);
        cr_expect(linattn_last_error()[0], "%s: allocation %ld: no message", name, k + 1);
        cr_expect_eq(linattn_test_alloc_live(), live0, "%s: allocation %ld of %ld failed: %ld "
                     "blocks leaked", name, k + 1, n, linattn_test_alloc_live() - live0);
    }
    return n;
}

static linattn_status op_config(void *ctx)
{
    linattn_config *c = malloc(sizeof *c);
    linattn_status st = linattn_config_load(ctx, c);
    free(c);
    return st;
}

static linattn_status op_model(void *ctx)
{
    linattn_model *m = NULL;
    linattn_status st = linattn_model_load(ctx, &m);
    linattn_model_free(m);
    return st;
}

/* model, session, prefill, save, load into a second session, step */
typedef struct stream_ctx {
    const char *config, *state;
    linattn_model *m;   /* made once, outside the sweep */
    linattn_session *s; /* fed a few tokens, outside the sweep */
} stream_ctx;

static linattn_status op_session(void *p)
{
    stream_ctx *c = p;
    linattn_session *s = NULL;
    linattn_status st = linattn_session_new(c->m, &s);
    linattn_session_free(s);
    return st;
}

static linattn_status op_save(void *p)
{
    stream_ctx *c = p;
    return linattn_session_save(c->s, c->state, "x", 1);
}

static linattn_status op_load(void *p)
{
    stream_ctx *c = p;
    char extra[4];
    return linattn_session_load(c->s, c->state, extra, sizeof extra, NULL);
}

static linattn_status op_npy(void *ctx)
{
    linattn_npy a;
    linattn_status st = linattn_npy_read(ctx, &a);
    if (st == LINATTN_OK) {
        size_t shape[1] = {a.count};
        st = linattn_npy_write(tu_path("copy.npy"), a.data, 1, shape);
    }
    linattn_npy_free(&a);
    return st;
}

static linattn_status op_sampler(void *ctx)
{
    (void)ctx;
    linattn_sampler *s = NULL;
    linattn_status st = linattn_sampler_new(256, 0.8f, 40, 0.9f, 7, &s);
    linattn_sampler_free(s);
    return st;
}

static linattn_status op_attention(void *ctx)
{
    int linear = *(int *)ctx;
    float q[2 * 3 * 4] = {0}, o[2 * 3 * 4];
    const float g[2] = {0.5f, 1.0f};
    linattn_attention_desc d;
    linattn_attention_desc_init(&d);
    d.batch = 1, d.heads = 2, d.len_q = d.len_k = 3, d.d_k = d.d_v = 4, d.causal = 1;
    d.threads = 1;
    d.decay = linear ? g : NULL; /* workspace NULL: allocated inside */
    return linear ? linattn_attention_linear(&d, q, q, q, o)
                  : linattn_attention_softmax(&d, q, q, q, o);
}

static linattn_status op_linear_state(void *ctx)
{
    (void)ctx;
    linattn_linear_state *s = NULL;
    const float g[3] = {0.5f, 0.9f, 1.0f};
    linattn_status st = linattn_linear_state_create(3, 8, 4, 1e-6f, g, &s);
    linattn_linear_state_free(s);
    return st;
}

Test(alloc, every_failure_is_reported_and_leaks_nothing)
{
    cr_expect_gt(sweep("config load", op_config,
                       (void *)tu_data("tiny-linear-pre-rms-gelu-none-decay.ini")), 0);
    /* F32 weights (read in place), F16 (converted), random weights */
    const char *models[] = {"tiny-linear-pre-rms-gelu-none-decay.ini",
                            "tiny-linear-pre-rms-gelu-none-tied-f16.ini",
                            "tiny-softmax-post-rms-relu-learned.ini"};
    for (size_t i = 0; i < 3; i++)
        cr_expect_gt(sweep(models[i], op_model, (void *)tu_data(models[i])), 0);
    tu_write_text(tu_path("random.ini"), "[model]\nweights = random:5\nd_model = 16\nn_heads = 2\n"
                                         "n_layers = 2\nd_ff = 16\ndecay = retnet\n");
    cr_expect_gt(sweep("random model", op_model, (void *)tu_path("random.ini")), 0);

    for (int kind = 0; kind < 2; kind++) {
        stream_ctx c = {kind ? tu_data("tiny-softmax-pre-ln-gelu-sincos.ini")
                             : tu_path("random.ini"),
                        tu_path("s.state"), NULL, NULL};
        cr_assert_eq(linattn_model_load(c.config, &c.m), LINATTN_OK);
        cr_assert_eq(linattn_session_new(c.m, &c.s), LINATTN_OK);
        int tokens[5] = {1, 2, 3, 4, 5};
        cr_assert_eq(linattn_session_feed(c.s, tokens, 5, NULL), LINATTN_OK);
        cr_expect_gt(sweep("session new", op_session, &c), 0);
        cr_expect_gt(sweep("session save", op_save, &c), 0);
        cr_expect_gt(sweep("session load", op_load, &c), 0);
        linattn_session_free(c.s);
        linattn_model_free(c.m);
    }
    cr_expect_gt(sweep(".npy read and write", op_npy, (void *)tu_data("decay-op-odd.q.npy")), 0);
    cr_expect_gt(sweep("sampler", op_sampler, NULL), 0);
    int linear = 0;
    cr_expect_gt(sweep("softmax operator", op_attention, &linear), 0);
    linear = 1;
    cr_expect_gt(sweep("linear operator", op_attention, &linear), 0);
    cr_expect_gt(sweep("linear state", op_linear_state, NULL), 0);
}

/* Feeding tokens allocates nothing: once a session exists, every failure
 * armed here stays unused. */
Test(alloc, feeding_allocates_nothing)
{
    linattn_model *m;
    cr_assert_eq(linattn_model_load(tu_data("tiny-linear-pre-rms-gelu-none-decay.ini"), &m),
                 LINATTN_OK);
    linattn_session *s;
    cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
    linattn_session_set_threads(s, 1);
    int tokens[300];
    for (int i = 0; i < 300; i++)
        tokens[i] = (i * 7) & 255;
    float logits[256];
    long made = linattn_test_alloc_count();
    linattn_test_fail_alloc(0);
    cr_expect_eq(linattn_session_feed(s, tokens, 300, logits), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_expect_eq(linattn_session_feed(s, tokens, 1, logits), LINATTN_OK);
    linattn_test_fail_alloc(-1);
    cr_expect_eq(linattn_test_alloc_count(), made);
    linattn_session_free(s);
    linattn_model_free(m);
}
