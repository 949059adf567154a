#include <criterion/criterion.h>
#include "linattn.h"
Test(isa, parse) { linattn_isa i; cr_assert_eq(linattn_isa_parse("AVX2", &i), LINATTN_OK); cr_assert_eq(i, LINATTN_ISA_AVX2); }
