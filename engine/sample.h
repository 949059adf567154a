/* sample.h: the sampler's internals that tests reach; not installed. */
#ifndef LINATTN_ENGINE_SAMPLE_H
#define LINATTN_ENGINE_SAMPLE_H

#include "linattn.h"

/* The distribution linattn_sample would draw from for these logits, without
 * drawing (the generator is untouched): probs[vocab], 0 outside the kept
 * set, the rest summing to 1; greedy: 1 at the argmax. The same code as the
 * draw, so tests check the sampler's steps exactly instead of by counting. */
linattn_status linattn_sampler_probs(linattn_sampler *s, const float *logits, double *probs);

#endif
