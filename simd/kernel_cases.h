/* kernel_cases.h: the timed case of every kernel, one table for checkasm --bench and linattn-bench's kernels suite; not installed. */
#ifndef LINATTN_SIMD_KERNEL_CASES_H
#define LINATTN_SIMD_KERNEL_CASES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

/* Kernel ids, from the one list. */
enum {
#define LINATTN_KCASE_ID(name, ret, params) LINATTN_K_##name,
    LINATTN_KERNELS(LINATTN_KCASE_ID)
#undef LINATTN_KCASE_ID
        LINATTN_N_KERNELS
};

static const char *const linattn_kernel_names[LINATTN_N_KERNELS] = {
#define LINATTN_KCASE_NAME(name, ret, params) [LINATTN_K_##name] = #name,
    LINATTN_KERNELS(LINATTN_KCASE_NAME)
#undef LINATTN_KCASE_NAME
};

typedef struct linattn_kernel_case {
    const char *kernel;
    size_t a, b, c; /* n; dk dv; rows cols; M N K */
    int heads;      /* linear_block_read over this many heads' states per call */
    float decay;    /* linear_block_read: 0 for none (c = 1, weights 1) */
} linattn_kernel_case;

/* Every kernel has at least one case (both programs say which lacks one). */
static const linattn_kernel_case linattn_kernel_cases[] = {
    {"dot", 64, 0, 0, 0, 0},          {"dot", 1024, 0, 0, 0, 0},
    {"max", 64, 0, 0, 0, 0},          {"max", 1024, 0, 0, 0, 0},
    {"sum", 64, 0, 0, 0, 0},          {"sum", 1024, 0, 0, 0, 0},
    {"axpy", 64, 0, 0, 0, 0},         {"axpy", 1024, 0, 0, 0, 0},
    {"scale", 64, 0, 0, 0, 0},        {"scale", 1024, 0, 0, 0, 0},
    {"exp_sub_sum", 64, 0, 0, 0, 0},  {"exp_sub_sum", 1024, 0, 0, 0, 0},
    {"elu1", 64, 0, 0, 0, 0},         {"elu1", 1024, 0, 0, 0, 0},
    {"relu", 64, 0, 0, 0, 0},         {"relu", 1024, 0, 0, 0, 0},
    {"gelu", 64, 0, 0, 0, 0},         {"gelu", 1024, 0, 0, 0, 0},
    {"silu_mul", 64, 0, 0, 0, 0},     {"silu_mul", 1376, 0, 0, 0, 0},
    {"layernorm", 64, 0, 0, 0, 0},    {"layernorm", 1024, 0, 0, 0, 0},
    {"rmsnorm", 64, 0, 0, 0, 0},      {"rmsnorm", 1024, 0, 0, 0, 0},
    {"linear_block_read", 64, 64, 0, 1, 0},
    {"linear_block_read", 64, 64, 0, 8, 0},
    {"linear_block_read", 64, 64, 0, 8, 0.96875f},
    /* a prefill's group of 3 rows after 5 waiting ones */
    {"linear_block_rows", 64, 64, 0, 1, 0},
    {"linear_block_rows", 64, 64, 0, 1, 0.96875f},
    {"gemv", 512, 512, 0, 0, 0},      {"gemv", 2048, 512, 0, 0, 0},
    {"gemm_nt", 64, 64, 64, 0, 0},    {"gemm_nt", 128, 512, 512, 0, 0},
    {"gemm_nt", 1, 2048, 2048, 0, 0}, {"gemm_nt", 16, 1024, 1024, 0, 0},
    {"gemm_nt", 256, 1024, 1024, 0, 0},
    {"gemm_nn", 64, 64, 64, 0, 0},    {"gemm_nn", 128, 512, 512, 0, 0},
    {"gemm_nn", 1, 64, 1024, 0, 0},
    {"gemm_tn", 64, 64, 16, 0, 0},    {"gemm_tn", 128, 512, 512, 0, 0},
    {"gemv_f16", 2048, 512, 0, 0, 0}, {"gemv_bf16", 2048, 512, 0, 0, 0},
    {"gemm_nt_f16", 128, 512, 512, 0, 0}, {"gemm_nt_bf16", 128, 512, 512, 0, 0},
    /* the server's step of 32 streams through kjv-linear's FFN (F16 weights) */
    {"gemm_nt_f16", 32, 1024, 256, 0, 0}, {"gemm_nt_f16", 32, 256, 1024, 0, 0},
    {"gemm_nn_f16", 1, 64, 1024, 0, 0}, {"to_f16", 1024, 0, 0, 0, 0},
    {"gemv_q8", 2048, 512, 0, 0, 0}, {"gemm_nt_q8", 128, 512, 512, 0, 0},
    {"gemv_q8_0", 2048, 512, 0, 0, 0}, {"gemv_q8_0", 2048, 2048, 0, 0, 0},
    {"gemv_quant", 2048, 2048, 0, 0, 0},
    /* 64 rows of 2048 of a prefill's weights (c = 64 sizes C and S to
     * hold them): heads holds the ggml type (12 Q4_K) */
    {"dequant", 64, 2048, 64, 12, 0},
    /* a prefill's projection: heads holds the ggml type (8 Q8_0, 12 Q4_K) */
    {"gemm_quant", 64, 1024, 1024, 8, 0}, {"gemm_quant", 64, 1024, 1024, 12, 0},
    /* a 512-row prompt's projection by a thread's 64-row block of the
     * weights, A quantized (heads: 2 Q4_0, 8 Q8_0, 12 Q4_K) */
    {"gemm_quant_xq", 512, 64, 2048, 2, 0}, {"gemm_quant_xq", 512, 64, 2048, 8, 0},
    {"gemm_quant_xq", 512, 64, 2048, 12, 0}, {"gemm_quant_xq", 128, 512, 512, 2, 0},
    {"quantize_q8_0", 2048, 0, 0, 0, 0}, {"quantize_q8_K", 2048, 0, 0, 0, 0},
};
#define LINATTN_N_KERNEL_CASES (sizeof linattn_kernel_cases / sizeof linattn_kernel_cases[0])

static inline int linattn_kernel_id(const char *name)
{
    for (int i = 0; i < LINATTN_N_KERNELS; i++)
        if (!strcmp(linattn_kernel_names[i], name))
            return i;
    return -1;
}

/* 1 if kernel id has a case in the table. */
static inline int linattn_kernel_has_case(int id)
{
    for (size_t i = 0; i < LINATTN_N_KERNEL_CASES; i++)
        if (!strcmp(linattn_kernel_cases[i].kernel, linattn_kernel_names[id]))
            return 1;
    return 0;
}

/* The inputs of a case; floats each, allocated by the caller with
 * linattn_kernel_case_floats' counts. */
typedef struct linattn_case_data {
    int id; /* LINATTN_K_* */
    float *x, *y, *w, *b, *S, *z, *C;
} linattn_case_data;

typedef struct linattn_case_floats {
    size_t x, y, w, b, S, z, C;
} linattn_case_floats;

static inline linattn_case_floats linattn_kernel_case_floats(const linattn_kernel_case *bc)
{
    linattn_case_floats f;
    size_t big = bc->a * (bc->b ? bc->b : 1) * (size_t)(bc->heads ? bc->heads : 1);
    /* x: A of a gemm; else the input, and for linear_block_* the 8 K rows
     * (a wide) then the 8 V rows (b wide) it reads from x */
    f.x = bc->c ? bc->a * bc->c : bc->a * (size_t)(bc->heads ? bc->heads : 1) + 8 * (bc->a + bc->b);
    f.y = bc->a * 8 + bc->b * 8;
    f.w = f.b = f.z = bc->a * 8;
    f.S = bc->c ? bc->b * bc->c : big;
    f.C = bc->c ? bc->a * bc->b : 1;
    return f;
}

/* d's buffers for case bc, each from alloc(floats, lo, hi) (values drawn
 * in [lo, hi): weights positive, z a plausible denominator); free each
 * with free(). */
static inline linattn_case_data linattn_kernel_case_data(const linattn_kernel_case *bc,
                                                         float *(*alloc)(size_t n, double lo,
                                                                         double hi))
{
    const linattn_case_floats f = linattn_kernel_case_floats(bc);
    linattn_case_data d = {
        .id = linattn_kernel_id(bc->kernel),
        .x = alloc(f.x, -2, 2),
        .y = alloc(f.y, -2, 2),
        .w = alloc(f.w, 0.01, 2),
        .b = alloc(f.b, 0.01, 2),
        .S = alloc(f.S, -1, 1),
        .z = alloc(f.z, 0, 10),
        .C = alloc(f.C, -1, 1),
    };
    return d;
}

/* Row weights of linear_block_*: decayed-looking. */
static const float linattn_case_weights[LINATTN_BLOCK_ROWS] = {
    0.6f, 0.62f, 0.64f, 0.67f, 0.69f, 0.71f, 0.74f, 0.76f,
    0.79f, 0.81f, 0.84f, 0.87f, 0.9f, 0.93f, 0.96f, 1.0f};

/* One call of case bc with table k on d (results of reductions into *sink,
 * so the calls are not optimized away). */
static inline void linattn_kernel_case_call(const linattn_kernels *k, const linattn_kernel_case *bc,
                                            const linattn_case_data *d, volatile float *sink)
{
    size_t n = bc->a;
    switch (d->id) {
    case LINATTN_K_dot: *sink = k->dot(d->x, d->y, n); break;
    case LINATTN_K_max: *sink = k->max(d->x, n); break;
    case LINATTN_K_sum: *sink = k->sum(d->x, n); break;
    case LINATTN_K_axpy: k->axpy(d->y, 1e-3f, d->x, n); break;
    case LINATTN_K_scale: k->scale(d->y, 1.0f, n); break;
    case LINATTN_K_exp_sub_sum: *sink = k->exp_sub_sum(d->y, d->x, 3.0f, n); break;
    case LINATTN_K_elu1: k->elu1(d->y, d->x, n); break;
    case LINATTN_K_relu: k->relu(d->y, d->x, n); break;
    case LINATTN_K_gelu: k->gelu(d->y, d->x, n); break;
    case LINATTN_K_silu_mul: k->silu_mul(d->y, d->x, d->w, n); break;
    case LINATTN_K_layernorm: k->layernorm(d->y, d->x, d->w, d->b, n, 1e-5f); break;
    case LINATTN_K_rmsnorm: k->rmsnorm(d->y, d->x, d->w, n, 1e-5f); break;
    case LINATTN_K_linear_block_read: /* a half-full block (8 rows, shared by the heads) */
        for (int h = 0; h < bc->heads; h++)
            k->linear_block_read(d->y + (size_t)h * bc->b, d->w + (size_t)h * bc->a,
                                 d->S + (size_t)h * bc->a * bc->b, d->z + (size_t)h * bc->a,
                                 d->x, d->x + 8 * bc->a, linattn_case_weights, 8,
                                 bc->decay > 0 ? bc->decay : 1.0f, bc->a, bc->b, 1e-6f);
        break;
    case LINATTN_K_linear_block_rows: { /* 3 rows after 5 waiting ones */
        static const float ones[LINATTN_BLOCK_ROWS] = {1, 1, 1, 1, 1, 1, 1, 1,
                                                       1, 1, 1, 1, 1, 1, 1, 1};
        static const float c[3] = {0.90f, 0.93f, 0.96f};
        const int decayed = bc->decay > 0;
        k->linear_block_rows(d->y, bc->b, d->w, d->S, d->z, d->x, d->x + 8 * bc->a,
                             decayed ? linattn_case_weights : ones, decayed ? c : ones, 5, 3, bc->a,
                             bc->b, 1e-6f);
        break;
    }
    case LINATTN_K_gemv: k->gemv(d->y, d->S, bc->b, d->x, d->b, bc->a, bc->b); break;
    case LINATTN_K_gemm_nt: k->gemm_nt(d->C, bc->b, d->x, bc->c, d->S, bc->c, bc->a, bc->b, bc->c); break;
    case LINATTN_K_gemm_nn: k->gemm_nn(d->C, bc->b, d->x, bc->c, d->S, bc->b, bc->a, bc->b, bc->c); break;
    case LINATTN_K_gemm_tn: k->gemm_tn(d->C, bc->b, d->x, bc->a, d->S, bc->b, bc->a, bc->b, bc->c); break;
    /* half weights: S's floats read as pairs of 16-bit values (the values
     * do not change the time) */
    case LINATTN_K_gemv_f16: k->gemv_f16(d->y, (const uint16_t *)(const void *)d->S, bc->b, d->x, d->b, bc->a, bc->b); break;
    case LINATTN_K_gemv_bf16: k->gemv_bf16(d->y, (const uint16_t *)(const void *)d->S, bc->b, d->x, d->b, bc->a, bc->b); break;
    case LINATTN_K_gemm_nt_f16: k->gemm_nt_f16(d->C, bc->b, d->x, bc->c, (const uint16_t *)(const void *)d->S, bc->c, bc->a, bc->b, bc->c); break;
    case LINATTN_K_gemm_nt_bf16: k->gemm_nt_bf16(d->C, bc->b, d->x, bc->c, (const uint16_t *)(const void *)d->S, bc->c, bc->a, bc->b, bc->c); break;
    case LINATTN_K_gemm_nn_f16: k->gemm_nn_f16(d->C, bc->b, d->x, bc->c, (const uint16_t *)(const void *)d->S, bc->b, bc->a, bc->b, bc->c); break;
    case LINATTN_K_to_f16: k->to_f16((uint16_t *)(void *)d->y, d->x, n); break;
    /* int8 weights: the first quarter of S's bytes, scales after them */
    case LINATTN_K_gemv_q8: k->gemv_q8(d->y, (const int8_t *)(const void *)d->S, d->S + bc->a * bc->b / 4, bc->b, d->x, d->b, bc->a, bc->b); break;
    case LINATTN_K_gemm_nt_q8: k->gemm_nt_q8(d->C, bc->b, d->x, bc->c, (const int8_t *)(const void *)d->S, d->S + bc->b * bc->c / 4, bc->c, bc->a, bc->b, bc->c); break;
    /* Q8_0 blocks: S's bytes (34 per 32 weights, 1.06 of the 4 a float has) */
    case LINATTN_K_gemv_q8_0: k->gemv_q8_0(d->y, (const uint8_t *)(const void *)d->S, bc->b / 32 * 34, d->x, d->b, bc->a, bc->b); break;
    /* Q4_K blocks (144 bytes per 256 weights) in S's bytes */
    case LINATTN_K_gemv_quant: k->gemv_quant(d->y, (const uint8_t *)(const void *)d->S, bc->b / 256 * 144, 12, d->x, d->b, bc->a, bc->b); break;
    case LINATTN_K_dequant: k->dequant(d->C, (const uint8_t *)(const void *)d->S, bc->b / 256 * 144, bc->heads, bc->a, bc->b); break;
    case LINATTN_K_gemm_quant: k->gemm_quant(d->C, bc->b, d->x, bc->c, (const uint8_t *)(const void *)d->S, bc->heads == 8 ? bc->c / 32 * 34 : bc->c / 256 * 144, bc->heads, bc->a, bc->b, bc->c); break;
    /* q in y's bytes, the scales in w, the sums in b */
    case LINATTN_K_quantize_q8_0: k->quantize_q8_0((int8_t *)(void *)d->y, d->w, (int32_t *)(void *)d->b, d->x, n); break;
    case LINATTN_K_quantize_q8_K: k->quantize_q8_K((int8_t *)(void *)d->y, d->w, (int32_t *)(void *)d->b, d->x, n); break;
    /* A's int8 in x's first quarter, then its scales (the random floats of
     * x) and block sums; W's blocks in S's bytes */
    case LINATTN_K_gemm_quant_xq: {
        size_t mk = bc->a * bc->c;
        k->gemm_quant_xq(d->C, bc->b, (const int8_t *)(const void *)d->x, d->x + mk / 4,
                         (const int32_t *)(const void *)(d->x + mk / 4 + mk / 32), bc->c,
                         (const uint8_t *)(const void *)d->S,
                         bc->heads == 12 ? bc->c / 256 * 144 : bc->c / 32 * (bc->heads == 8 ? 34 : 18),
                         bc->heads, bc->a, bc->b, bc->c);
        break;
    }
    default: break;
    }
}

#endif
