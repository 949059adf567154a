/* gemm_avx2.c: register-blocked AVX2 gemm (placeholder). */
typedef int linattn_gemm_avx2_placeholder;
