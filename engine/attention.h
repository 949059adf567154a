/* attention.h: what the softmax and linear operators share: descriptor checks, strides, threads, workspace. */
#ifndef LINATTN_ENGINE_ATTENTION_H
#define LINATTN_ENGINE_ATTENTION_H

#include "internal.h"

/* Workspace buffers start on this many bytes (a cache line). */
#define ATTN_ALIGN 64

/* A checked descriptor with its strides resolved (never all zero). */
typedef struct attn_plan {
    int B, H, Lq, Lk, dk, dv;
    int causal;
    const int *lengths; /* NULL: Lk for every sequence */
    int threads;        /* >= 1; 1 without OpenMP */
    float scale;        /* softmax, resolved (never 0) */
    float eps;          /* linear */
    const float *decay; /* linear, causal: [H] in (0, 1], NULL: none */
    linattn_linear_mode mode; /* linear */
    int group;          /* query heads per k/v head (heads / kv_heads) */
    int window;         /* softmax, causal: keys p - window < j <= p; 0: no limit */
    linattn_layout q, k, v, out;
} attn_plan;

/* Checks d and the tensors for operator op ("softmax" or "linear") and
 * fills p. Any bad field is LINATTN_ERR_INVALID naming the op and field. */
linattn_status attn_plan_make(const linattn_attention_desc *d, const char *op, const float *q,
                              const float *k, const float *v, const float *out, attn_plan *p);

/* Valid keys of sequence b. */
static inline int attn_len(const attn_plan *p, int b)
{
    return p->lengths ? p->lengths[b] : p->Lk;
}

/* Every decay[0..heads) in (0, 1]; else LINATTN_ERR_INVALID naming op and head. */
linattn_status attn_check_decay(const float *decay, int heads, const char *op);

/* Threads a call asking for `requested` runs with: the free cores, up to
 * `requested` (0: up to the OpenMP default); see linattn_threads_free. */
int attn_threads(int requested);
/* The most a call asking for `requested` can use (0: the OpenMP default):
 * what workspaces are sized for. */
int attn_threads_max(int requested);

/* Threads worth using for about `work` multiply-adds: below a few hundred
 * thousand, forking costs more than it saves (and with busy cores a
 * barrier can wait a whole time slice). */
int attn_threads_for_work(int threads, double work);

/* The calling thread's number in the current parallel region (0 outside). */
int attn_thread_id(void);

/* Checks a layout of an (L, D) per-head tensor: the rows must hold D floats.
 * Inputs may broadcast over heads and batches (stride 0). */
linattn_status attn_check_input_layout(const linattn_layout *l, int L, int D, const char *op,
                                       const char *name);
/* The same for an output, whose (B, H, L) rows must also not overlap. */
linattn_status attn_check_output_layout(const linattn_layout *l, int B, int H, int L, int D,
                                        const char *op, const char *name);

/* Floats rounded up to a whole number of ATTN_ALIGN bytes. */
static inline size_t attn_round(size_t floats)
{
    const size_t per = ATTN_ALIGN / sizeof(float);
    return (floats + per - 1) / per * per;
}

/* a*b, or SIZE_MAX if it overflows (sizes saturate, then fail to allocate). */
size_t attn_mul(size_t a, size_t b);
size_t attn_add(size_t a, size_t b);

/* Bytes of a workspace of `threads` blocks of `per_thread` floats after
 * `shared` floats (each already attn_round-ed), with alignment slack. */
size_t attn_workspace_bytes(size_t shared, size_t per_thread, int threads);

/* The workspace of a call: the descriptor's (checked against `bytes`) or
 * a new one, which the caller frees with free(*owned). Aligned. */
linattn_status attn_workspace_get(const linattn_attention_desc *d, size_t bytes, const char *op,
                                  float **ws, void **owned);

/* The algorithm AUTO picks for n paired rows of one head. */
linattn_linear_mode linattn_linear_auto_mode(int n, int d_k, int d_v);

/* A decode step split by heads, for callers that spread (stream, head)
 * pairs over threads: linattn_linear_step_heads does heads [h0, h1) of
 * one token (q, k, v, out are the whole [heads * d] rows), folding in the
 * caller's scratch of linattn_linear_step_scratch_bytes (one per thread at
 * a time); different heads of one state may run at once. Once every head
 * has stepped, linattn_linear_step_done counts the token. Together they
 * equal linattn_linear_step bit for bit. */
size_t linattn_linear_step_scratch_bytes(const linattn_linear_state *s);
linattn_status linattn_linear_step_heads(linattn_linear_state *s, int h0, int h1, const float *q,
                                         const float *k, const float *v, float *out,
                                         void *scratch);
void linattn_linear_step_done(linattn_linear_state *s);
/* Fetches head h's state into L2 ahead of its step (a batch's next unit). */
void linattn_linear_prefetch_head(const linattn_linear_state *s, int h);

/* Grouped-query attention on a state (set right after create, before any
 * token): each of its heads holds the sums of one k/v head, read by
 * `group` query heads. Steps and prefills then take q and out with
 * heads * group heads (query head h reading state head h / group) and k, v
 * with heads heads; step_heads' [h0, h1) count state heads. Equals a state
 * of heads * group heads fed each k/v head repeated, bit for bit, in 1/group
 * of its memory. No decay (every query head of a group would need its
 * own). */
linattn_status linattn_linear_state_set_group(linattn_linear_state *s, int group);

/* A session's state: no prefill workspace (nor a group's start sums) of
 * its own; each call runs in what linattn_linear_state_lend gave it (ws of
 * bytes, from linattn_linear_state_lend_bytes for the call's threads, and
 * *start bytes for start when grouped; NULL: nothing lent, the state then
 * allocates its own as a standalone one does). */
void linattn_linear_state_borrow(linattn_linear_state *s);
size_t linattn_linear_state_lend_bytes(const linattn_linear_state *s, int threads, size_t *start);
void linattn_linear_state_lend(linattn_linear_state *s, void *ws, size_t bytes, float *start);
/* Bytes the state holds (its sums and its own buffers). */
size_t linattn_linear_state_memory_bytes(const linattn_linear_state *s);
/* Head h's two range exponents (phi(k) and v are held in its sums times
 * 2^-e[0], 2^-e[1]; 0 unless an input passed 2^20): what a saved state
 * stores with S, z and the rows. */
int *linattn_linear_state_exps(linattn_linear_state *s, int head);

/* The denominator of head h's read as the state stands, without eps:
 * phi(q) . z over every key it holds (decayed), phi(q) = phiq given. With
 * a step's output (eps = 0) it gives the head's unnormalised sums.
 * stepped: the head has taken this token's key (linattn_linear_step_heads)
 * and the state has not yet counted it (linattn_linear_step_done). */
float linattn_linear_state_den(const linattn_linear_state *s, const linattn_kernels *kt, int h,
                               const float *phiq, int stepped);

/* z[dk] = head h's key sum as a read now weighs it (the folded sums and
 * the waiting rows, decayed): linattn_linear_state_den is phi(q) . z. */
void linattn_linear_state_z_now(const linattn_linear_state *s, const linattn_kernels *kt, int h,
                                float *z);

/* The softmax operator over fp32 or (kv16) half k and v that also writes
 * each row's log-sum-exp of its visible scaled scores, lse[(b H + h) len_q
 * + i] (-inf for a row that saw no key): what a caller needs to merge the
 * result with attention over other keys. */
linattn_status linattn_attention_softmax_lse(const linattn_attention_desc *d, const float *q,
                                             const void *k, const void *v, float *out, float *lse,
                                             int kv16);

#endif
