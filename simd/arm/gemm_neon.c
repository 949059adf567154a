/* gemm_neon.c: register-blocked NEON gemm (placeholder). */
typedef int linattn_gemm_neon_placeholder;
