/* test_tokenizer.c: tokenizers (bytes, llama2.c tokenizer.bin, Hugging Face tokenizer.json) against hand-worked ids; malformed files; config, model and CLI use. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "linattn.h"
#include "../engine/cli/cli.h"
#include "../engine/mem.h"
#include "testutil.h"

TestSuite(tokenizer, .init = tu_make_dir, .fini = tu_remove_dir);
TestSuite(tokenizer_cli, .init = tu_make_dir, .fini = tu_remove_dir);

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

static linattn_tokenizer *load_ok(const char *spec)
{
    linattn_tokenizer *t = NULL;
    linattn_status st = linattn_tokenizer_load(spec, &t);
    cr_assert_eq(st, LINATTN_OK, "%s: %s", spec, linattn_last_error());
    cr_assert_not_null(t);
    return t;
}

/* The load fails with status st and a message holding each of the texts. */
static void load_fails(const char *spec, linattn_status st, const char *a, const char *b)
{
    linattn_tokenizer *t = (linattn_tokenizer *)1;
    linattn_status got = linattn_tokenizer_load(spec, &t);
    cr_assert_eq(got, st, "%s: status %d, want %d (%s)", spec, got, st, linattn_last_error());
    cr_assert_null(t, "out is NULL after a failure");
    cr_assert(strstr(linattn_last_error(), a), "'%s' not in: %s", a, linattn_last_error());
    if (b)
        cr_assert(strstr(linattn_last_error(), b), "'%s' not in: %s", b, linattn_last_error());
}

/* text encodes to want[n]. */
static void expect_ids(const linattn_tokenizer *t, const char *text, int add_bos, const int *want,
                       size_t n)
{
    int got[256];
    size_t len = strlen(text), k = 0, q = 0;
    linattn_status st = linattn_tokenizer_encode(t, text, len, add_bos, got, 256, &k);
    cr_assert_eq(st, LINATTN_OK, "'%s': %s", text, linattn_last_error());
    cr_assert_eq(linattn_tokenizer_encode(t, text, len, add_bos, NULL, 0, &q), LINATTN_OK);
    cr_assert_eq(q, k, "the size query agrees with the encoding");
    char shown[512] = "";
    for (size_t i = 0; i < k; i++)
        snprintf(shown + strlen(shown), sizeof shown - strlen(shown), " %d", got[i]);
    cr_assert_eq(k, n, "'%s' gave %zu tokens (%s), want %zu", text, k, shown, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "'%s': token %zu is %d, want %d (got%s)", text, i, got[i],
                     want[i], shown);
}

static void expect_piece(const linattn_tokenizer *t, int prev, int token, const char *want)
{
    const char *p;
    size_t l;
    cr_assert_eq(linattn_tokenizer_decode(t, prev, token, &p, &l), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_assert(l == strlen(want) && !memcmp(p, want, l), "token %d after %d: '%.*s', want '%s'",
              token, prev, (int)l, p, want);
}

/* ------------------------------------------------------------------------ */
/* llama2.c tokenizer.bin                                                    */
/* ------------------------------------------------------------------------ */

/* The test vocabulary, laid out as llama2.c's: <unk>, <s>, </s>, the 256
 * byte tokens <0x00>..<0xFF> (ids 3..258, byte + 3), then these, with the
 * scores that order the merges (higher merges first). */
enum { SP = 259, A, B, C, AB, BC, SA, ABC, EACUTE, SAB, CA, N_L2C };
static const struct {
    const char *s;
    float score;
} l2c_words[] = {
    [SP - SP] = {" ", -1}, [A - SP] = {"a", -2}, [B - SP] = {"b", -3}, [C - SP] = {"c", -4},
    [AB - SP] = {"ab", -5}, [BC - SP] = {"bc", -0.5f}, [SA - SP] = {" a", -6},
    [ABC - SP] = {"abc", -7}, [EACUTE - SP] = {"\xc3\xa9", -8}, [SAB - SP] = {" ab", -9},
    [CA - SP] = {"ca", -0.5f}, /* ties with bc */
};

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* Appends one token; returns the new length. */
static size_t put_token(unsigned char *buf, size_t at, float score, const char *s, size_t n)
{
    uint32_t bits;
    memcpy(&bits, &score, 4);
    put32(buf + at, bits);
    put32(buf + at + 4, (uint32_t)n);
    memcpy(buf + at + 8, s, n);
    return at + 8 + n;
}

/* The file's bytes into buf; returns their count. */
static size_t make_tokbin(unsigned char *buf)
{
    size_t at = 4;
    put32(buf, 6); /* "<0x00>" is the longest piece */
    at = put_token(buf, at, 0, "<unk>", 5);
    at = put_token(buf, at, 0, "\n<s>\n", 5);
    at = put_token(buf, at, 0, "\n</s>\n", 6);
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        at = put_token(buf, at, 0, s, 6);
    }
    for (int i = 0; i < N_L2C - SP; i++)
        at = put_token(buf, at, l2c_words[i].score, l2c_words[i].s, strlen(l2c_words[i].s));
    return at;
}

static const char *write_tokbin(const char *name)
{
    static unsigned char buf[8192];
    size_t n = make_tokbin(buf);
    const char *path = tu_path(name);
    tu_write_file(path, buf, n);
    return path;
}

static linattn_tokenizer *load_l2c(void)
{
    char spec[4200];
    snprintf(spec, sizeof spec, "llama2c:%s", write_tokbin("tokenizer.bin"));
    return load_ok(spec);
}

Test(tokenizer, llama2c_reads_every_token)
{
    linattn_tokenizer *t = load_l2c();
    cr_assert_eq(linattn_tokenizer_vocab(t), N_L2C);
    cr_assert_eq(linattn_tokenizer_bos(t), 1);
    cr_assert_eq(linattn_tokenizer_eos(t), 2);
    cr_assert_eq(linattn_tokenizer_adds_bos(t), 1);
    cr_assert_str_eq(linattn_tokenizer_name(t), "llama2c");
    cr_assert(strstr(linattn_tokenizer_path(t), "tokenizer.bin"));
    linattn_tokenizer_free(t);
}

/* run.c's encode, worked by hand on the scores above. */
Test(tokenizer, llama2c_merges_by_score)
{
    linattn_tokenizer *t = load_l2c();
    /* "abc": the dummy prefix, then ' ' a b c. Pairs: " a" -6, "ab" -5,
     * "bc" -0.5: bc first -> ' ' a bc. Then " a" -6 and "abc" (a + bc) -7:
     * " a" -> " a" bc; " abc" is no token: done. */
    expect_ids(t, "abc", 0, (int[]){SA, BC}, 2);
    /* the same after BOS (BOS + " " is no token, so BOS stays alone) */
    expect_ids(t, "abc", 1, (int[]){1, SA, BC}, 3);
    /* "ab": ' ' a b; "ab" -5 beats " a" -6 -> ' ' ab; then " ab" -9 -> " ab" */
    expect_ids(t, "ab", 0, (int[]){SAB}, 1);
    /* "bca": ' ' b c a; "bc" and "ca" tie at -0.5: the leftmost merges
     * (run.c keeps the first best), leaving ' ' bc a; " b", " bc", "bca"
     * are no tokens */
    expect_ids(t, "bca", 0, (int[]){SP, BC, A}, 3);
    /* a code point in the vocabulary is its token */
    expect_ids(t, "\xc3\xa9", 0, (int[]){SP, EACUTE}, 2);
    /* one that is not falls back to its bytes, byte + 3: U+00FC is C3 BC */
    expect_ids(t, "\xc3\xbc", 0, (int[]){SP, 0xC3 + 3, 0xBC + 3}, 3);
    /* stray continuation bytes group as one code point (up to 4), no token */
    expect_ids(t, "\x80\x80", 0, (int[]){SP, 0x80 + 3, 0x80 + 3}, 3);
    /* an empty text has no dummy prefix */
    expect_ids(t, "", 0, NULL, 0);
    expect_ids(t, "", 1, (int[]){1}, 1);
    /* a NUL byte inside the text is a byte like any other (<0x00>, id 3):
     * ' ' a <0x00> -> " a" <0x00> */
    int got[8];
    size_t n;
    cr_assert_eq(linattn_tokenizer_encode(t, "a\0", 2, 0, got, 8, &n), LINATTN_OK);
    cr_assert_eq(n, 2);
    cr_assert(got[0] == SA && got[1] == 3, "%d %d", got[0], got[1]);
    linattn_tokenizer_free(t);
}

Test(tokenizer, llama2c_decodes_as_run_c)
{
    linattn_tokenizer *t = load_l2c();
    expect_piece(t, 1, SA, "a");         /* after BOS the leading space goes */
    expect_piece(t, A, SA, " a");        /* elsewhere it stays */
    expect_piece(t, -1, SA, " a");       /* run.c strips after BOS only */
    expect_piece(t, 7, 0x41 + 3, "A");   /* <0x41> is the byte A */
    expect_piece(t, 1, 0x20 + 3, " ");   /* a <0x20> byte keeps its space after BOS */
    expect_piece(t, 5, EACUTE, "\xc3\xa9");
    const char *p;
    size_t l;
    cr_assert_eq(linattn_tokenizer_decode(t, 1, N_L2C, &p, &l), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "outside"), "%s", linattn_last_error());
    cr_assert_eq(linattn_tokenizer_decode(t, 1, -1, &p, &l), LINATTN_ERR_INVALID);

    /* round trips: BOS, then the text back byte for byte */
    const char *texts[] = {"abc", "bca cab", "\xc3\xa9t\xc3\xa9 \xc3\xbc\n", "  a  b  "};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int ids[64];
        size_t n;
        char back[128];
        cr_assert_eq(linattn_tokenizer_encode(t, texts[i], strlen(texts[i]), 1, ids, 64, &n),
                     LINATTN_OK, "%s", linattn_last_error());
        cr_assert_eq(ids[0], 1);
        size_t m = 0;
        for (size_t k = 1; k < n; k++) {
            cr_assert_eq(linattn_tokenizer_decode(t, ids[k - 1], ids[k], &p, &l), LINATTN_OK);
            memcpy(back + m, p, l);
            m += l;
        }
        cr_assert(m == strlen(texts[i]) && !memcmp(back, texts[i], m), "'%s' came back '%.*s'",
                  texts[i], (int)m, back);
    }
    linattn_tokenizer_free(t);
}

/* A buffer too small is an error with the count set, never a truncation. */
Test(tokenizer, encode_refuses_a_small_buffer)
{
    linattn_tokenizer *t = load_l2c();
    int ids[2] = {-7, -7};
    size_t n = 0;
    cr_assert_eq(linattn_tokenizer_encode(t, "bca", 3, 1, ids, 2, &n), LINATTN_ERR_INVALID);
    cr_assert_eq(n, 4, "the count it needs (BOS ' ' bc a)");
    cr_assert(strstr(linattn_last_error(), "4 tokens do not fit in 2"), "%s", linattn_last_error());
    cr_assert(ids[0] == -7 && ids[1] == -7, "nothing written");
    linattn_tokenizer *bytes = load_ok("bytes");
    cr_assert_eq(linattn_tokenizer_encode(bytes, "abc", 3, 0, ids, 2, &n), LINATTN_ERR_INVALID);
    cr_assert_eq(n, 3);
    linattn_tokenizer_free(bytes);
    linattn_tokenizer_free(t);
}

Test(tokenizer, llama2c_malformed_files)
{
    unsigned char buf[8192], bad[8192];
    size_t n = make_tokbin(buf);
    char spec[4200];
    const char *path = tu_path("bad.bin");
    snprintf(spec, sizeof spec, "llama2c:%s", path);

    /* cut inside the last token's bytes ("ca": 2 bytes, cut to 1) */
    tu_write_file(path, buf, n - 1);
    load_fails(spec, LINATTN_ERR_FORMAT, "bad.bin: token 269", "truncated");
    /* cut inside a score */
    tu_write_file(path, buf, n - 2 - 8 + 3);
    load_fails(spec, LINATTN_ERR_FORMAT, "token 269", "truncated");
    /* shorter than the header */
    tu_write_file(path, buf, 3);
    load_fails(spec, LINATTN_ERR_FORMAT, "bad.bin", "max_token_length");
    /* a negative length (token 0's, at byte 4 + 4) */
    memcpy(bad, buf, n);
    put32(bad + 8, (uint32_t)-5);
    tu_write_file(path, bad, n);
    load_fails(spec, LINATTN_ERR_FORMAT, "token 0 at byte 4", "length -5");
    /* a length past max_token_length */
    memcpy(bad, buf, n);
    put32(bad, 4); /* "<unk>" has 5 bytes */
    tu_write_file(path, bad, n);
    load_fails(spec, LINATTN_ERR_FORMAT, "token 0 at byte 4: length 5", "is not in 0..4");
    /* max_token_length 0 */
    put32(bad, 0);
    tu_write_file(path, bad, n);
    load_fails(spec, LINATTN_ERR_FORMAT, "max_token_length 0", NULL);
    /* a header alone */
    tu_write_file(path, buf, 4);
    load_fails(spec, LINATTN_ERR_FORMAT, "no tokens", NULL);
    /* no such file */
    load_fails("llama2c:/nonexistent/tokenizer.bin", LINATTN_ERR_IO, "/nonexistent/tokenizer.bin",
               NULL);
    load_fails("llama2c:", LINATTN_ERR_INVALID, "no file", NULL);
    load_fails("sentencepiece:x", LINATTN_ERR_INVALID, "expected bytes, llama2c:PATH, hf:PATH or gguf:PATH",
               NULL);
}

/* Without the 256 byte tokens a byte that needs one is an error, not a
 * wrong id. */
Test(tokenizer, llama2c_missing_byte_token)
{
    unsigned char buf[256];
    size_t at = 4;
    put32(buf, 5);
    at = put_token(buf, at, 0, "<unk>", 5);
    at = put_token(buf, at, 0, "<s>", 3);
    at = put_token(buf, at, 0, "</s>", 4);
    at = put_token(buf, at, 0, " ", 1);
    at = put_token(buf, at, 0, "a", 1);
    tu_write_file(tu_path("small.bin"), buf, at);
    char spec[4200];
    snprintf(spec, sizeof spec, "llama2c:%s", tu_path("small.bin"));
    linattn_tokenizer *t = load_ok(spec);
    cr_assert_eq(linattn_tokenizer_vocab(t), 5);
    expect_ids(t, "a", 1, (int[]){1, 3, 4}, 3);
    size_t n;
    cr_assert_eq(linattn_tokenizer_encode(t, "ax", 2, 1, NULL, 0, &n), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "byte 0x78"), "%s", linattn_last_error());
    /* where it is: byte 3 of "aaax" */
    cr_assert_eq(linattn_tokenizer_encode(t, "aaax", 4, 1, NULL, 0, &n), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "byte 0x78 at byte 3 of the text"), "%s",
              linattn_last_error());
    linattn_tokenizer_free(t);
}

/* ------------------------------------------------------------------------ */
/* Bytes                                                                     */
/* ------------------------------------------------------------------------ */

Test(tokenizer, bytes_object)
{
    linattn_tokenizer *t = load_ok("bytes");
    linattn_tokenizer *u = load_ok(NULL);
    cr_assert_eq(linattn_tokenizer_vocab(t), 256);
    cr_assert_eq(linattn_tokenizer_bos(t), -1);
    cr_assert_eq(linattn_tokenizer_eos(t), -1);
    cr_assert_eq(linattn_tokenizer_adds_bos(u), 0);
    expect_ids(t, "A\xff", 1, (int[]){'A', 0xff}, 2); /* no bos to add */
    expect_piece(t, -1, ' ', " ");
    expect_piece(t, 3, 0xC3, "\xc3");
    int ids[4];
    cr_assert_eq(linattn_tokenize("hi", 2, ids), 2);
    cr_assert_eq(linattn_token_byte(ids[1]), 'i');
    linattn_tokenizer_free(t);
    linattn_tokenizer_free(u);
}

/* ------------------------------------------------------------------------ */
/* Hugging Face tokenizer.json: byte-level (GPT-2)                           */
/* ------------------------------------------------------------------------ */

/* GPT-2's byte map: printable bytes are themselves, ' ' is U+0120 (Ġ,
 * C4 A0), '\n' U+010A (Ċ, C4 8A); 0xC3 is 'Ã' (C3 83) and 0xA9 '©' (C2 A9). */
static const char gpt2_vocab[] =
    "{\"a\": 0, \"b\": 1, \"c\": 2, \"\xc4\xa0\": 3, \"ab\": 4, \"\xc4\xa0" "a\": 5,"
    " \"\xc4\xa0" "ab\": 6, \"bc\": 7, \"<|endoftext|>\": 8, \"\xc4\x8a\": 9, \"!\": 10,"
    " \"\xc3\x83\": 11, \"\xc2\xa9\": 12, \"\xc3\x83\xc2\xa9\": 13}";

static void write_gpt2(const char *dir_file, int pairs)
{
    char json[2048];
    const char *merges = pairs ? "[[\"a\", \"b\"], [\"\xc4\xa0\", \"a\"], [\"\xc4\xa0" "a\", \"b\"],"
                                 " [\"\xc3\x83\", \"\xc2\xa9\"]]"
                               : "[\"a b\", \"\xc4\xa0 a\", \"\xc4\xa0" "a b\", \"\xc3\x83 \xc2\xa9\"]";
    snprintf(json, sizeof json,
             "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 8, \"content\": "
             "\"<|endoftext|>\", \"special\": true}], \"normalizer\": null,"
             " \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false,"
             " \"trim_offsets\": true, \"use_regex\": true},"
             " \"decoder\": {\"type\": \"ByteLevel\"},"
             " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null,"
             " \"vocab\": %s, \"merges\": %s}}",
             gpt2_vocab, merges);
    tu_write_text(dir_file, json);
}

static void check_gpt2(linattn_tokenizer *t)
{
    cr_assert_str_eq(linattn_tokenizer_name(t), "hf byte-level BPE");
    cr_assert_eq(linattn_tokenizer_vocab(t), 14);
    /* "ab ab" splits into "ab", " ab" (a space leads its word). "ab": (a, b)
     * rank 0 -> ab. " ab" = Ġ a b: (a, b) rank 0 beats (Ġ, a) rank 1 ->
     * Ġ ab, and (Ġ, ab) is no merge ("Ġa b" needs Ġa): 3 4, not Ġab (6). */
    expect_ids(t, "ab ab", 0, (int[]){4, 3, 4}, 3);
    /* " a": (Ġ, a) rank 1 -> Ġa */
    expect_ids(t, " a", 0, (int[]){5}, 1);
    /* punctuation is its own word: " ab" "!" */
    expect_ids(t, " ab!", 0, (int[]){3, 4, 10}, 3);
    /* two spaces before a word: the first alone, the second leads the word */
    expect_ids(t, "a  a", 0, (int[]){0, 3, 5}, 3);
    /* é = C3 A9 = Ã © -> merge rank 3 */
    expect_ids(t, "\xc3\xa9", 0, (int[]){13}, 1);
    /* a line break: "a" "\n" "b" */
    expect_ids(t, "a\nb", 0, (int[]){0, 9, 1}, 3);
    /* the special token is recognised in the text */
    expect_ids(t, "a<|endoftext|>b", 0, (int[]){0, 8, 1}, 3);
    /* "bc" is in the vocabulary but no merge makes it */
    expect_ids(t, "bc", 0, (int[]){1, 2}, 2);
    /* a byte without a token is an error naming it */
    size_t n;
    cr_assert_eq(linattn_tokenizer_encode(t, "ax", 2, 0, NULL, 0, &n), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "78"), "%s", linattn_last_error());

    expect_piece(t, -1, 3, " ");
    expect_piece(t, -1, 5, " a"); /* byte-level keeps every space */
    expect_piece(t, 0, 9, "\n");
    expect_piece(t, 0, 8, "<|endoftext|>");
    expect_piece(t, 0, 11, "\xc3"); /* half a character: the next token ends it */
    int ids[32];
    char back[64];
    const char *text = "ab\xc3\xa9 a!\n<|endoftext|>  cab";
    cr_assert_eq(linattn_tokenizer_encode(t, text, strlen(text), 0, ids, 32, &n), LINATTN_OK,
                 "%s", linattn_last_error());
    cr_assert_str_eq((tu_decode_all(t, ids, n, back), back), text);
}

Test(tokenizer, hf_byte_level)
{
    write_gpt2(tu_path("tokenizer.json"), 0);
    tu_write_text(tu_path("config.json"), "{\"bos_token_id\": 8, \"eos_token_id\": [8, 3]}");
    char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", tu_dir()); /* the folder */
    linattn_tokenizer *t = load_ok(spec);
    check_gpt2(t);
    cr_assert_eq(linattn_tokenizer_bos(t), 8);
    cr_assert_eq(linattn_tokenizer_eos(t), 8, "a list's first id");
    cr_assert_eq(linattn_tokenizer_adds_bos(t), 0, "no template or add_bos_token: no bos added");
    expect_ids(t, "a", 1, (int[]){8, 0}, 2);
    linattn_tokenizer_free(t);
}

/* merges as [a, b] pairs (newer files) give the same ids; the file path
 * itself is accepted; no config.json: no bos or eos */
Test(tokenizer, hf_byte_level_pair_merges)
{
    write_gpt2(tu_path("tok.json"), 1);
    char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", tu_path("tok.json"));
    linattn_tokenizer *t = load_ok(spec);
    check_gpt2(t);
    cr_assert_eq(linattn_tokenizer_bos(t), -1);
    cr_assert_eq(linattn_tokenizer_eos(t), -1);
    expect_ids(t, "a", 1, (int[]){0}, 1); /* add_bos without a bos adds nothing */
    linattn_tokenizer_free(t);
}

/* ------------------------------------------------------------------------ */
/* Hugging Face tokenizer.json: sentencepiece (metaspace, byte fallback)     */
/* ------------------------------------------------------------------------ */

#define SP_VOCAB                                                                            \
    "{\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, \"<0x41>\": 3, \"<0xC3>\": 4, \"<0xBC>\": 5,"  \
    " \"\xe2\x96\x81\": 6, \"a\": 7, \"b\": 8, \"\xe2\x96\x81" "a\": 9, \"ab\": 10,"         \
    " \"\xe2\x96\x81" "ab\": 11, \"<0x0A>\": 12}"
#define SP_MERGES "[\"\xe2\x96\x81 a\", \"a b\", \"\xe2\x96\x81" "a b\"]"
#define SP_ADDED                                                                            \
    "[{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"                              \
    " {\"id\": 1, \"content\": \"<s>\", \"special\": true},"                                \
    " {\"id\": 2, \"content\": \"</s>\", \"special\": true}]"

static void write_sp(const char *path, const char *normalizer, const char *pre_tokenizer)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"added_tokens\": " SP_ADDED ", \"normalizer\": %s, \"pre_tokenizer\": %s,"
             " \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true,"
             " \"byte_fallback\": true, \"vocab\": " SP_VOCAB ", \"merges\": " SP_MERGES "}}",
             normalizer, pre_tokenizer);
    tu_write_text(path, json);
}

static void check_sp_common(linattn_tokenizer *t)
{
    cr_assert_str_eq(linattn_tokenizer_name(t), "hf sentencepiece BPE");
    cr_assert_eq(linattn_tokenizer_bos(t), 1);
    cr_assert_eq(linattn_tokenizer_eos(t), 2);
    cr_assert_eq(linattn_tokenizer_adds_bos(t), 1);
    /* "ab" -> "▁ab" = ▁ a b: (▁, a) rank 0 -> ▁a b, then (▁a, b) rank 2 -> ▁ab */
    expect_ids(t, "ab", 1, (int[]){1, 11}, 2);
    /* "ab ab" -> ▁ a b ▁ a b: both (▁, a) rank 0, leftmost first, then the
     * other; the (a, b) rank-1 pairs are gone; both (▁a, b) rank 2 -> ▁ab ▁ab */
    expect_ids(t, "ab ab", 0, (int[]){11, 11}, 2);
    /* "A" has no token: its byte <0x41> */
    expect_ids(t, "A", 0, (int[]){6, 3}, 2);
    /* U+00FC (C3 BC): its two byte tokens */
    expect_ids(t, "\xc3\xbc", 0, (int[]){6, 4, 5}, 3);
    /* "cc": no token and no byte token: one unknown (fused) */
    expect_ids(t, "cc", 0, (int[]){6, 0}, 2);
    expect_ids(t, "\n", 0, (int[]){6, 12}, 2);

    expect_piece(t, -1, 11, "ab");  /* the first word's space goes */
    expect_piece(t, 1, 11, "ab");   /* after bos too */
    expect_piece(t, 7, 11, " ab");
    expect_piece(t, 7, 3, "A");
    expect_piece(t, 7, 12, "\n");
    expect_piece(t, 7, 4, "\xc3");
    expect_piece(t, 7, 2, "</s>");
    /* round trip (decoding from the start of the text: its first space goes) */
    const char *text = "ab ab\nA \xc3\xbc";
    int ids[32];
    size_t n;
    char back[64];
    cr_assert_eq(linattn_tokenizer_encode(t, text, strlen(text), 0, ids, 32, &n), LINATTN_OK);
    cr_assert_str_eq((tu_decode_all(t, ids, n, back), back), text);
}

/* The Metaspace pre-tokenizer (prepend_scheme first): after a special
 * token the text gets no prefix. */
Test(tokenizer, hf_metaspace)
{
    write_sp(tu_path("tokenizer.json"), "null",
             "{\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\","
             " \"prepend_scheme\": \"first\", \"split\": false}");
    tu_write_text(tu_path("tokenizer_config.json"),
                  "{\"add_bos_token\": true, \"bos_token\": \"<s>\","
                  " \"eos_token\": {\"content\": \"</s>\", \"special\": true}}");
    char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", tu_dir());
    linattn_tokenizer *t = load_ok(spec);
    check_sp_common(t);
    expect_ids(t, "<s>a", 0, (int[]){1, 7}, 2);
    /* " a" already starts with the replacement: no second one */
    expect_ids(t, " a", 0, (int[]){9}, 1);
    linattn_tokenizer_free(t);
}

/* Llama's legacy form: normalizer Prepend + Replace, no pre-tokenizer:
 * every stretch of text gets the prefix, even after a special token. */
Test(tokenizer, hf_sentencepiece_normalizer)
{
    write_sp(tu_path("tokenizer.json"),
             "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\":"
             " \"\xe2\x96\x81\"}, {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"},"
             " \"content\": \"\xe2\x96\x81\"}]}",
             "null");
    tu_write_text(tu_path("config.json"), "{\"bos_token_id\": 1, \"eos_token_id\": 2}");
    tu_write_text(tu_path("tokenizer_config.json"), "{\"add_bos_token\": true}");
    char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", tu_dir());
    linattn_tokenizer *t = load_ok(spec);
    check_sp_common(t);
    expect_ids(t, "<s>a", 0, (int[]){1, 9}, 2);
    /* Prepend is unconditional: " a" -> "▁▁a" -> ▁ ▁a */
    expect_ids(t, " a", 0, (int[]){6, 9}, 2);
    linattn_tokenizer_free(t);
}

Test(tokenizer, hf_malformed_files)
{
    const char *path = tu_path("tokenizer.json");
    char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", path);

    tu_write_text(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}");
    load_fails(spec, LINATTN_ERR_FORMAT, "tokenizer.json: not valid JSON", "near byte");
    tu_write_text(path, "[1, 2]");
    load_fails(spec, LINATTN_ERR_FORMAT, "not a JSON object", NULL);
    tu_write_text(path, "{\"version\": \"1.0\"}");
    load_fails(spec, LINATTN_ERR_FORMAT, "no \"model\" object", NULL);
    tu_write_text(path, "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}");
    load_fails(spec, LINATTN_ERR_UNSUPPORTED, "model.type 'WordPiece'", "only BPE");
    tu_write_text(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}");
    load_fails(spec, LINATTN_ERR_FORMAT, "model.vocab['a']", "token id");
    tu_write_text(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0},"
                        " \"merges\": []}}");
    load_fails(spec, LINATTN_ERR_FORMAT, "id 0 is given to both", NULL);
    tu_write_text(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1},"
                        " \"merges\": [\"a b\"]}}");
    load_fails(spec, LINATTN_ERR_FORMAT, "model.merges[0] ('a' + 'b')", "their join");
    tu_write_text(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1},"
                        " \"merges\": [\"ab\"]}}");
    load_fails(spec, LINATTN_ERR_FORMAT, "model.merges[0] 'ab'", "split by one space");
    tu_write_text(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}");
    load_fails(spec, LINATTN_ERR_FORMAT, "no tokens", NULL);
    tu_write_text(path, "{\"pre_tokenizer\": {\"type\": \"Whitespace\"}, \"model\": {\"type\":"
                        " \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}");
    load_fails(spec, LINATTN_ERR_UNSUPPORTED, "pre_tokenizer 'Whitespace'", NULL);
    tu_write_text(path, "{\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"vocab\":"
                        " {\"a\": 0}, \"merges\": []}}");
    load_fails(spec, LINATTN_ERR_FORMAT, "unk_token '<unk>'", NULL);
    /* a config beside it naming a token the tokenizer lacks */
    write_gpt2(path, 0);
    tu_write_text(tu_path("tokenizer_config.json"), "{\"bos_token\": \"<s>\"}");
    load_fails(spec, LINATTN_ERR_FORMAT, "tokenizer_config.json: bos_token '<s>'", NULL);
    tu_write_text(tu_path("tokenizer_config.json"), "{\"bos_token\": ");
    load_fails(spec, LINATTN_ERR_FORMAT, "tokenizer_config.json: not valid JSON", NULL);
    /* a folder without tokenizer.json */
    char dir[4200];
    snprintf(dir, sizeof dir, "hf:%s/nothere", tu_dir());
    load_fails(dir, LINATTN_ERR_IO, "nothere", NULL);
    load_fails("hf:", LINATTN_ERR_INVALID, "no folder", NULL);
}

/* Load, encode, decode, free: a failure of any allocation is an error with
 * a message, and leaks nothing. */
static linattn_status load_and_use(const char *spec)
{
    linattn_tokenizer *t = NULL;
    linattn_status st = linattn_tokenizer_load(spec, &t);
    if (st != LINATTN_OK)
        return st;
    int ids[64];
    size_t n;
    const char *text = "ab ab<|endoftext|> \xc3\xa9 ab"; /* known bytes (sp: unknowns fused) */
    st = linattn_tokenizer_encode(t, text, strlen(text), 1, ids, 64, &n);
    linattn_tokenizer_free(t);
    return st;
}

Test(tokenizer, every_allocation_failure_is_reported)
{
    char specs[3][4200];
    snprintf(specs[0], sizeof specs[0], "llama2c:%s", write_tokbin("tokenizer.bin"));
    write_gpt2(tu_path("gpt2.json"), 0);
    snprintf(specs[1], sizeof specs[1], "hf:%s", tu_path("gpt2.json"));
    write_sp(tu_path("sp.json"), "null",
             "{\"type\": \"Metaspace\", \"prepend_scheme\": \"always\", \"split\": true}");
    snprintf(specs[2], sizeof specs[2], "hf:%s", tu_path("sp.json"));
    for (int k = 0; k < 3; k++) {
        long live0 = linattn_test_alloc_live(), made0 = linattn_test_alloc_count();
        cr_assert_eq(load_and_use(specs[k]), LINATTN_OK, "%s: %s", specs[k], linattn_last_error());
        long n = linattn_test_alloc_count() - made0;
        cr_assert_gt(n, 3, "the control: %s allocates", specs[k]);
        cr_assert_eq(linattn_test_alloc_live(), live0);
        for (long i = 0; i < n; i++) {
            linattn_test_fail_alloc(i);
            linattn_status st = load_and_use(specs[k]);
            linattn_test_fail_alloc(-1);
            cr_expect_neq(st, LINATTN_OK, "%s: allocation %ld of %ld failed, yet it succeeded",
                          specs[k], i + 1, n);
            cr_expect(linattn_last_error()[0], "%s: allocation %ld: no message", specs[k], i + 1);
            cr_expect_eq(linattn_test_alloc_live(), live0, "%s: allocation %ld leaked", specs[k],
                         i + 1);
        }
    }
}

/* One tokenizer shared by threads (read-only once loaded): each thread's
 * encodings equal the single-threaded one. */
typedef struct shared_job {
    const linattn_tokenizer *t;
    const char *text;
    const int *want;
    size_t n;
    int bad;
} shared_job;

static void *encode_often(void *arg)
{
    shared_job *j = arg;
    int ids[256];
    size_t n;
    for (int r = 0; r < 200; r++)
        if (linattn_tokenizer_encode(j->t, j->text, strlen(j->text), 1, ids, 256, &n) !=
                LINATTN_OK ||
            n != j->n || memcmp(ids, j->want, n * sizeof *ids) != 0)
            j->bad++;
    return NULL;
}

Test(tokenizer, shared_by_threads)
{
    write_sp(tu_path("tokenizer.json"), "null",
             "{\"type\": \"Metaspace\", \"prepend_scheme\": \"always\", \"split\": true}");
    char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", tu_path("tokenizer.json"));
    linattn_tokenizer *t = load_ok(spec);
    const char *text = "ab ab a b ba <s> ab\n\xc3\xbc A ab ab ab abab a";
    int want[256];
    size_t n;
    cr_assert_eq(linattn_tokenizer_encode(t, text, strlen(text), 1, want, 256, &n), LINATTN_OK);
    cr_assert_gt(n, 10);
    pthread_t th[4];
    shared_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (shared_job){t, text, want, n, 0};
        cr_assert_eq(pthread_create(&th[i], NULL, encode_often, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(jobs[i].bad, 0, "thread %d: %d encodings differ", i, jobs[i].bad);
    }
    linattn_tokenizer_free(t);
}

/* ------------------------------------------------------------------------ */
/* The CLI's UTF-8 assembly                                                  */
/* ------------------------------------------------------------------------ */

Test(tokenizer, utf8_held_until_whole)
{
    cli_utf8 u = {{0}, 0, 0};
    char out[16];
    /* é (C3 A9) cut between two tokens: nothing, then both bytes */
    cr_assert_eq(cli_utf8_take(&u, "a\xc3", 2, out), 1);
    cr_assert_eq(out[0], 'a');
    cr_assert_eq(cli_utf8_take(&u, "\xa9" "b", 2, out), 3);
    cr_assert(!memcmp(out, "\xc3\xa9" "b", 3));
    /* a 4-byte character (U+1F600, F0 9F 98 80) one byte at a time */
    const char *smile = "\xf0\x9f\x98\x80";
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cli_utf8_take(&u, smile + i, 1, out), 0);
    cr_assert_eq(cli_utf8_take(&u, smile + 3, 1, out), 4);
    cr_assert(!memcmp(out, smile, 4));
    /* a lead byte cut short by another character: both go out as they are */
    cr_assert_eq(cli_utf8_take(&u, "\xe2\x96" "x", 3, out), 3);
    cr_assert(!memcmp(out, "\xe2\x96" "x", 3));
    /* a stray continuation byte and invalid bytes pass at once */
    cr_assert_eq(cli_utf8_take(&u, "\x80\xff\xc0", 3, out), 3);
    cr_assert(!memcmp(out, "\x80\xff\xc0", 3));
    /* what is held at the end is flushed as it is */
    cr_assert_eq(cli_utf8_take(&u, "\xe2\x96", 2, out), 0);
    cr_assert_eq(cli_utf8_flush(&u, out), 2);
    cr_assert(!memcmp(out, "\xe2\x96", 2));
    cr_assert_eq(cli_utf8_flush(&u, out), 0);
}

/* ------------------------------------------------------------------------ */
/* Config, model and CLI                                                     */
/* ------------------------------------------------------------------------ */

/* A random model of vocab_size V with the tokenizer line given. */
static const char *write_model(const char *name, int vocab, const char *tokenizer_line,
                               const char *extra)
{
    char body[1024];
    snprintf(body, sizeof body,
             "[model]\nweights = random:7\nvocab_size = %d\nd_model = 16\nn_heads = 2\n"
             "n_layers = 1\nd_ff = 16\n%s%s",
             vocab, tokenizer_line, extra ? extra : "");
    const char *path = tu_path(name);
    tu_write_text(path, body);
    return path;
}

Test(tokenizer, config_key_resolves_paths)
{
    write_tokbin("tokenizer.bin");
    const char *ini = write_model("m.ini", 300, "tokenizer = llama2c:tokenizer.bin\n", NULL);
    linattn_config c;
    linattn_config_defaults(&c);
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK, "%s", linattn_last_error());
    char want[4200];
    snprintf(want, sizeof want, "llama2c:%s", tu_path("tokenizer.bin"));
    cr_assert_str_eq(c.tokenizer, want, "resolved from the config's folder");

    ini = write_model("h.ini", 300, "tokenizer = hf:/abs/dir\n", NULL);
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_str_eq(c.tokenizer, "hf:/abs/dir");
    ini = write_model("b.ini", 300, "tokenizer = bytes\n", NULL);
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_str_eq(c.tokenizer, "bytes");

    ini = write_model("bad.ini", 300, "tokenizer = spm:x\n", NULL);
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "bad.ini:8: [model] key 'tokenizer'") &&
                  strstr(linattn_last_error(), "expected bytes, llama2c:PATH, hf:PATH or gguf:PATH"),
              "%s", linattn_last_error());
    ini = write_model("empty.ini", 300, "tokenizer = llama2c:\n", NULL);
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "empty path"), "%s", linattn_last_error());
    /* a hand-built config is validated too */
    linattn_config_defaults(&c);
    strcpy(c.weights, "random:1");
    c.d_model = 16, c.n_heads = 2, c.n_layers = 1, c.d_ff = 16;
    strcpy(c.tokenizer, "gpt2");
    cr_assert_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "key 'tokenizer'"), "%s", linattn_last_error());
}

Test(tokenizer, model_owns_its_tokenizer)
{
    write_tokbin("tokenizer.bin");
    linattn_model *m = NULL;
    const char *ini = write_model("m.ini", 300, "tokenizer = llama2c:tokenizer.bin\n", NULL);
    cr_assert_eq(linattn_model_load(ini, &m), LINATTN_OK, "%s", linattn_last_error());
    const linattn_tokenizer *t = linattn_model_tokenizer(m);
    cr_assert_eq(linattn_tokenizer_vocab(t), N_L2C);
    cr_assert_eq(linattn_tokenizer_bos(t), 1);
    linattn_model_free(m);

    /* the default is bytes */
    ini = write_model("d.ini", 256, "", NULL);
    cr_assert_eq(linattn_model_load(ini, &m), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_str_eq(linattn_tokenizer_name(linattn_model_tokenizer(m)), "bytes");
    linattn_model_free(m);

    /* more tokens than the model has: an error naming both */
    ini = write_model("small.ini", 256, "tokenizer = llama2c:tokenizer.bin\n", NULL);
    cr_assert_eq(linattn_model_load(ini, &m), LINATTN_ERR_INVALID);
    cr_assert_null(m);
    cr_assert(strstr(linattn_last_error(), "small.ini: [model] key 'tokenizer'") &&
                  strstr(linattn_last_error(), "270 tokens") &&
                  strstr(linattn_last_error(), "vocab_size 256"),
              "%s", linattn_last_error());
    /* a tokenizer that cannot be read names the config, the key and the file */
    ini = write_model("gone.ini", 300, "tokenizer = llama2c:gone.bin\n", NULL);
    cr_assert_eq(linattn_model_load(ini, &m), LINATTN_ERR_IO);
    cr_assert(strstr(linattn_last_error(), "gone.ini: [model] key 'tokenizer'") &&
                  strstr(linattn_last_error(), "gone.bin"),
              "%s", linattn_last_error());
}

/* generate stops at the end-of-text token (forced here by a logit bias)
 * unless --ignore-eos. */
Test(tokenizer_cli, generate_stops_at_eos)
{
    write_tokbin("tokenizer.bin");
    const char *ini = write_model("m.ini", 300, "tokenizer = llama2c:tokenizer.bin\n", NULL);
    tu_run_result r = tu_run("generate", ini, "-p", "ab", "-n", "5", "--logit-bias", "2=1000",
                             "--print-ids", NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "2\n", "the eos id, then the end");
    tu_run_free(&r);
    r = tu_run("generate", ini, "-p", "ab", "-n", "5", "--logit-bias", "2=1000", "--print-ids",
               "--ignore-eos", NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "2 2 2 2 2\n");
    tu_run_free(&r);
    /* as text: the prompt, and nothing for the eos */
    r = tu_run("generate", ini, "-p", "ab", "-n", "5", "--logit-bias", "2=1000", NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "ab\n");
    cr_assert_eq(r.err_len, 0, "%s", r.err);
    tu_run_free(&r);
}

/* generate prints tokens as text: pieces with their spaces, byte tokens as
 * bytes, a character cut across two tokens whole. */
Test(tokenizer_cli, generate_decodes_tokens)
{
    write_tokbin("tokenizer.bin");
    const char *ini = write_model("m.ini", 300, "tokenizer = llama2c:tokenizer.bin\n", NULL);
    char bias[32];
    snprintf(bias, sizeof bias, "%d=1000", SA); /* " a" */
    tu_run_result r = tu_run("generate", ini, "-p", "b", "-n", "3", "--logit-bias", bias, NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "b a a a\n");
    tu_run_free(&r);
    snprintf(bias, sizeof bias, "%d=1000", EACUTE);
    r = tu_run("generate", ini, "-p", "b", "-n", "2", "--logit-bias", bias, "--no-display-prompt",
               NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "\xc3\xa9\xc3\xa9\n");
    tu_run_free(&r);
    /* a token past the tokenizer's 270: said once */
    r = tu_run("generate", ini, "-p", "b", "-n", "2", "--logit-bias", "290=1000", NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "b\n");
    cr_assert(strstr(r.err, "token 290 is past the 270 tokens of the tokenizer (llama2c)"), "%s",
              r.err);
    cr_assert_eq(tu_count_lines(r.err, r.err_len), 1, "%s", r.err);
    tu_run_free(&r);
}

/* info names the tokenizer. */
Test(tokenizer_cli, info_names_the_tokenizer)
{
    write_tokbin("tokenizer.bin");
    const char *ini = write_model("m.ini", 300, "tokenizer = llama2c:tokenizer.bin\n", NULL);
    tu_run_result r = tu_run("info", ini, NULL);
    tu_assert_ok(&r);
    char want[4300];
    snprintf(want, sizeof want,
             "  tokenizer: llama2c (%s), vocab 270, bos 1 (starts a text), eos 2\n",
             tu_path("tokenizer.bin"));
    cr_assert(strstr(r.out, want), "'%s' not in:\n%s", want, r.out);
    tu_run_free(&r);
    ini = write_model("d.ini", 256, "", NULL);
    r = tu_run("info", ini, NULL);
    tu_assert_ok(&r);
    cr_assert(strstr(r.out, "  tokenizer: bytes, vocab 256\n"), "%s", r.out);
    tu_run_free(&r);
}

static double json_number(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(json, pat);
    cr_assert(p, "no %s in %s", key, json);
    return strtod(p + strlen(pat), NULL);
}

/* eval with a tokenizer: the bits of every token after bos (computed here
 * from the library's logits in double) over the bytes of the text. */
Test(tokenizer_cli, eval_bits_per_byte_over_tokens)
{
    write_tokbin("tokenizer.bin");
    const char *ini = write_model("m.ini", 300, "tokenizer = llama2c:tokenizer.bin\n", NULL);
    const char *text = "ab ab bca \xc3\xa9\xc3\xbc\nabc";
    tu_write_text(tu_path("text.txt"), text);
    tu_run_result r = tu_run("eval", ini, "--text", tu_path("text.txt"), "--json",
                             tu_path("out.json"), "--block", "8", NULL);
    tu_assert_ok(&r);
    size_t jn;
    char *json = tu_read_file(tu_path("out.json"), &jn);
    cr_assert_eq(json_number(json, "bytes"), (double)strlen(text),
                 "every byte of the text is scored once (bos first)");

    linattn_model *m;
    cr_assert_eq(linattn_model_load(ini, &m), LINATTN_OK, "%s", linattn_last_error());
    const linattn_tokenizer *t = linattn_model_tokenizer(m);
    int ids[64];
    size_t n;
    cr_assert_eq(linattn_tokenizer_encode(t, text, strlen(text), 1, ids, 64, &n), LINATTN_OK);
    linattn_session *s;
    cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
    float *logits = malloc(n * 300 * sizeof *logits);
    /* as the CLI: the last token is only predicted */
    cr_assert_eq(linattn_session_feed_all(s, ids, (int)n - 1, logits), LINATTN_OK);
    double bits = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        const float *row = logits + i * 300;
        double mx = -INFINITY, sum = 0;
        for (int v = 0; v < 300; v++)
            mx = fmax(mx, row[v]);
        for (int v = 0; v < 300; v++)
            sum += exp((double)row[v] - mx);
        bits += (log(sum) + mx - row[ids[i + 1]]) / log(2.0);
    }
    /* the JSON prints 6 decimals (5e-7); the CLI and this sum the same
     * float logits, up to fp32 rounding if their thread counts differ */
    cr_assert_float_eq(json_number(json, "bits_per_byte"), bits / (double)strlen(text), 1e-5);
    free(logits);
    free(json);
    linattn_session_free(s);
    linattn_model_free(m);
    tu_run_free(&r);
}

/* A Hugging Face sentencepiece tokenizer named by its folder (relative to
 * the config): the prompt gets its bos, tokens print with their spaces,
 * and </s> (from tokenizer_config.json) ends the text. */
Test(tokenizer_cli, generate_with_hf_folder)
{
    write_sp(tu_path("tokenizer.json"), "null",
             "{\"type\": \"Metaspace\", \"prepend_scheme\": \"first\", \"split\": true}");
    tu_write_text(tu_path("tokenizer_config.json"),
                  "{\"add_bos_token\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}");
    const char *ini = write_model("m.ini", 16, "tokenizer = hf:.\n", NULL);
    tu_run_result r = tu_run("info", ini, NULL);
    tu_assert_ok(&r);
    cr_assert(strstr(r.out, "tokenizer: hf sentencepiece BPE (") &&
                  strstr(r.out, "tokenizer.json), vocab 13, bos 1 (starts a text), eos 2\n"),
              "%s", r.out);
    tu_run_free(&r);
    /* 11 is "▁ab": after the prompt's last token it prints " ab" */
    r = tu_run("generate", ini, "-p", "a", "-n", "3", "--logit-bias", "11=1000", NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "a ab ab ab\n");
    tu_run_free(&r);
    r = tu_run("generate", ini, "-p", "a", "-n", "3", "--logit-bias", "2=1000", "--print-ids",
               NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "2\n", "</s> ends the text");
    tu_run_free(&r);
    /* the model must hold every token of the tokenizer */
    ini = write_model("small.ini", 12, "tokenizer = hf:.\n", NULL);
    r = tu_run("generate", ini, "-p", "a", NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "the tokenizer (hf sentencepiece BPE, ") &&
                  strstr(r.err, "has 13 tokens, more than the model's vocab_size 12"),
              "%s", r.err);
    tu_run_free(&r);
}

/* BOS starts a new stream only: "ab" is BOS " ab" (2 tokens) fresh, and
 * " ab" alone (1) fed to a resumed stream. */
Test(tokenizer_cli, bos_only_in_a_new_stream)
{
    write_tokbin("tokenizer.bin");
    const char *ini = write_model("m.ini", 300, "tokenizer = llama2c:tokenizer.bin\n", NULL);
    const char *state = tu_path("s.state");
    tu_run_result r = tu_run("generate", ini, "-p", "ab", "-n", "2", "--stats", "--save-state",
                             state, NULL);
    tu_assert_ok(&r);
    cr_assert(strstr(r.err, "stats: prompt 2 tokens,"), "%s", r.err);
    tu_run_free(&r);
    r = tu_run("generate", ini, "--load-state", state, "-p", "ab", "-n", "2", "--stats", NULL);
    tu_assert_ok(&r);
    cr_assert(strstr(r.err, "stats: prompt 1 tokens,"), "%s", r.err);
    tu_run_free(&r);
}

/* eval --window counts tokens; every byte of the text is still scored once. */
Test(tokenizer_cli, eval_windows_of_tokens)
{
    write_tokbin("tokenizer.bin");
    const char *ini = write_model("m.ini", 300, "tokenizer = llama2c:tokenizer.bin\n",
                                  "attention = softmax\nmax_seq_len = 4\n");
    const char *text = "ab ab bca abc cab ab\nab";
    tu_write_text(tu_path("text.txt"), text);
    tu_run_result r = tu_run("eval", ini, "--text", tu_path("text.txt"), NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "tokens do not fit the model's context (max_seq_len 4"), "%s", r.err);
    tu_run_free(&r);
    r = tu_run("eval", ini, "--text", tu_path("text.txt"), "--window", "4", "--json",
               tu_path("w.json"), NULL);
    tu_assert_ok(&r);
    cr_assert(strstr(r.out, "window 4 tokens\n"), "%s", r.out);
    size_t n;
    char *json = tu_read_file(tu_path("w.json"), &n);
    cr_assert_eq(json_number(json, "bytes"), (double)strlen(text));
    free(json);
    tu_run_free(&r);
}

/* tokenize / detokenize: the ids the library gives, in each output form,
 * and back to the same bytes; with a config's tokenizer or --tokenizer. */
Test(tokenizer_cli, tokenize_and_back)
{
    char spec[4200];
    snprintf(spec, sizeof spec, "llama2c:%s", write_tokbin("tokenizer.bin"));
    const char *ini = write_model("m.ini", 300, "tokenizer = llama2c:tokenizer.bin\n", NULL);
    /* llama2.c adds bos: 1, then " a" bc as llama2c_merges_by_score works out */
    tu_run_result r = tu_run("tokenize", ini, "abc", NULL);
    tu_assert_ok(&r);
    char want[64];
    snprintf(want, sizeof want, "1 %d %d\n", SA, BC);
    cr_assert_str_eq(r.out, want);
    tu_run_free(&r);
    r = tu_run("tokenize", "--tokenizer", spec, "abc", "--no-bos", "--pieces", NULL);
    tu_assert_ok(&r);
    snprintf(want, sizeof want, "%d\t a\n%d\tbc\n", SA, BC);
    cr_assert_str_eq(r.out, want);
    tu_run_free(&r);
    r = tu_run("tokenize", ini, "abc", "--count", NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "3\n");
    tu_run_free(&r);
    /* back: bos gives no text, and the dummy prefix's space is dropped */
    char ids[64];
    snprintf(ids, sizeof ids, "1 %d %d", SA, BC);
    r = tu_run("detokenize", ini, ids, NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "abc");
    tu_run_free(&r);

    /* bytes, from a file and from stdin: the text as it is (a control byte
     * and the final newline kept; \xNN in --pieces) */
    tu_write_file(tu_path("t.txt"), "a\tb\n", 4);
    r = tu_run("tokenize", "--tokenizer", "bytes", "-f", tu_path("t.txt"), NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "97 9 98 10\n");
    tu_run_free(&r);
    tu_next_stdin(tu_path("t.txt"));
    r = tu_run("tokenize", "--tokenizer", "bytes", "--pieces", NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "97\ta\n9\t\\x09\n98\tb\n10\t\\x0a\n");
    tu_run_free(&r);
    tu_write_text(tu_path("ids.txt"), "97, 9\n98 10\n");
    tu_next_stdin(tu_path("ids.txt"));
    r = tu_run("detokenize", "--tokenizer", "bytes", NULL);
    tu_assert_ok(&r);
    cr_assert_eq(r.out_len, 4);
    cr_assert_eq(memcmp(r.out, "a\tb\n", 4), 0);
    tu_run_free(&r);
}

/* Bad input: one line naming what is wrong, and no partial output. */
Test(tokenizer_cli, tokenize_bad_input)
{
    const struct {
        const char *args[6];
        const char *want;
    } cases[] = {
        {{"tokenize", NULL}, "give a CONFIG or --tokenizer SPEC"},
        {{"tokenize", "--tokenizer", "bytes", "a", "b", NULL}, "unexpected argument 'b'"},
        {{"tokenize", "--tokenizer", "bytes", "a", "-f", "x"}, "not both"},
        {{"tokenize", "--tokenizer", "bytes", "-f", "/nonexistent/t.txt", NULL},
         "/nonexistent/t.txt: cannot open"},
        {{"tokenize", "--tokenizer", "nope:x", "a", NULL}, "nope:x"},
        {{"tokenize", "/nonexistent.ini", "a", NULL}, "/nonexistent.ini"},
        {{"tokenize", "--frob", NULL}, "unknown option '--frob'"},
        {{"detokenize", "--tokenizer", "bytes", "72", "256", NULL},
         "id 2: 256 is not a token of this tokenizer (0..255)"},
        {{"detokenize", "--tokenizer", "bytes", "72", "-1", NULL}, "id 2: -1 is not a token"},
        {{"detokenize", "--tokenizer", "bytes", "7x", NULL},
         "id 1: expected an integer, got '7x'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const *a = cases[i].args;
        tu_run_result r = tu_run(a[0], a[1], a[2], a[3], a[4], a[5], NULL);
        cr_expect_eq(r.status, 1, "case %zu", i);
        cr_expect_eq(r.out_len, 0, "case %zu wrote: %s", i, r.out);
        cr_expect(strstr(r.err, cases[i].want), "case %zu: %s", i, r.err);
        cr_expect(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "one line: %s", r.err);
        tu_run_free(&r);
    }
}

/* ------------------------------------------------------------------------ */
/* Worst cases of the encoders, positions in errors, strict Metaspace        */
/* ------------------------------------------------------------------------ */

/* CPU time: other processes on the machine do not count */
static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A tokenizer.bin whose merges chain 'a' -> 'aa' -> ... -> 'a' x 1999, each
 * scoring above the last, and one piece of a million 'b's (so no pair is
 * too long to try): a text of 'a's grows one symbol a byte at a time to
 * 1999 bytes, then the next. Joining the two pieces of every candidate pair
 * cost their length (2 million bytes of text: 1e10 bytes copied and hashed,
 * 20 s and more); the merge table makes each pair one lookup: about 1 s
 * of CPU here, asserted under 10 s. */
Test(tokenizer, llama2c_merge_chain_is_n_log_n)
{
    enum { CHAIN = 2000, TEXT = 2000000 };
    enum { LONG_B = 1000000 };
    size_t cap = 4 + (4 + 256 + CHAIN) * 8 + (size_t)CHAIN * CHAIN / 2 + LONG_B + 4096, at = 4;
    unsigned char *buf = malloc(cap);
    char *s = malloc(TEXT);
    cr_assert(buf && s);
    put32(buf, LONG_B);
    at = put_token(buf, at, 0, "<unk>", 5);
    at = put_token(buf, at, 0, "<s>", 3);
    at = put_token(buf, at, 0, "</s>", 4);
    for (int b = 0; b < 256; b++) {
        char p[8];
        snprintf(p, sizeof p, "<0x%02X>", b);
        at = put_token(buf, at, 0, p, 6);
    }
    at = put_token(buf, at, 0, " ", 1);     /* id 259 */
    memset(s, 'a', TEXT);
    for (int n = 1; n < CHAIN; n++)          /* 'a' x n: id 259 + n */
        at = put_token(buf, at, (float)n, s, (size_t)n);
    memset(s, 'b', LONG_B);
    at = put_token(buf, at, 0, s, LONG_B);
    memset(s, 'a', TEXT);
    tu_write_file(tu_path("chain.bin"), buf, at);
    char spec[4200];
    snprintf(spec, sizeof spec, "llama2c:%s", tu_path("chain.bin"));
    double t0 = seconds();
    linattn_tokenizer *t = load_ok(spec);
    int *ids = malloc(4096 * sizeof *ids);
    size_t n = 0;
    cr_assert_eq(linattn_tokenizer_encode(t, s, TEXT, 1, ids, 4096, &n), LINATTN_OK, "%s",
                 linattn_last_error());
    double dt = seconds() - t0;
    /* bos, ' ', 1000 x 'a' x 1999, 'a' x 1000 */
    cr_assert_eq(n, 2 + 1000 + 1, "%zu tokens", n);
    cr_assert_eq(ids[0], 1);
    cr_assert_eq(ids[1], 259);
    for (size_t i = 2; i < 1002; i++)
        cr_assert_eq(ids[i], 259 + 1999, "token %zu is %d", i, ids[i]);
    cr_assert_eq(ids[1002], 259 + 1000);
    cr_assert(dt < 10.0, "2 MB through a merge chain took %.1f s", dt);
    linattn_tokenizer_free(t);
    free(ids);
    free(buf);
    free(s);
}

/* The same merge chain at the largest prompt read (--prompt-file: 64 MiB of
 * 'a'), a benchmark (meson test --benchmark worst_cases sets
 * LINATTN_WORST_CASES; plain test runs skip it): measured here 25 s of CPU
 * to encode (release, Emerald Rapids VM), linear in the text (the 2 MB test
 * above takes 1.6 s with the load); asserted under 200 s, 8x, where the
 * pair copies of before (22.8 s a megabyte) would take about 1,500 s. */
Test(tokenizer, worst_llama2c_merge_chain_64_mib)
{
    if (!getenv("LINATTN_WORST_CASES"))
        cr_skip_test("a benchmark: meson test --benchmark worst_cases");
    enum { CHAIN = 2000, LONG_B = 1000000 };
    const size_t text = (size_t)64 << 20;
    size_t cap = 4 + (4 + 256 + CHAIN) * 8 + (size_t)CHAIN * CHAIN / 2 + LONG_B + 4096, at = 4;
    unsigned char *buf = malloc(cap);
    char *s = malloc(text);
    cr_assert(buf && s);
    put32(buf, LONG_B);
    at = put_token(buf, at, 0, "<unk>", 5);
    at = put_token(buf, at, 0, "<s>", 3);
    at = put_token(buf, at, 0, "</s>", 4);
    for (int b = 0; b < 256; b++) {
        char p[8];
        snprintf(p, sizeof p, "<0x%02X>", b);
        at = put_token(buf, at, 0, p, 6);
    }
    at = put_token(buf, at, 0, " ", 1); /* id 259 */
    memset(s, 'a', CHAIN);
    for (int n = 1; n < CHAIN; n++)     /* 'a' x n: id 259 + n */
        at = put_token(buf, at, (float)n, s, (size_t)n);
    memset(s, 'b', LONG_B);
    at = put_token(buf, at, 0, s, LONG_B);
    memset(s, 'a', text);
    tu_write_file(tu_path("chain.bin"), buf, at);
    free(buf);
    char spec[4200];
    snprintf(spec, sizeof spec, "llama2c:%s", tu_path("chain.bin"));
    linattn_tokenizer *t = load_ok(spec);
    size_t want = 2 + text / 1999 + 1, n = 0;
    int *ids = malloc((want + 16) * sizeof *ids);
    cr_assert(ids);
    double t0 = tu_cpu_seconds();
    cr_assert_eq(linattn_tokenizer_encode(t, s, text, 1, ids, want + 16, &n), LINATTN_OK, "%s",
                 linattn_last_error());
    double dt = tu_cpu_seconds() - t0;
    /* bos, ' ', then 'a' x 1999 as long as they last, then the rest */
    cr_assert_eq(n, want, "%zu tokens, want %zu", n, want);
    cr_assert(ids[0] == 1 && ids[1] == 259);
    for (size_t i = 2; i < n - 1; i++)
        cr_assert_eq(ids[i], 259 + 1999, "token %zu is %d", i, ids[i]);
    cr_assert_eq(ids[n - 1], 259 + (int)(text % 1999));
    fprintf(stderr, "64 MiB through a merge chain: %.1f s CPU\n", dt);
    cr_assert_lt(dt, 200.0, "64 MiB through a merge chain took %.1f s", dt);
    linattn_tokenizer_free(t);
    free(ids);
    free(s);
}

/* FNV-1a's low k bits after a byte depend only on its low k bits before:
 * a 3-byte block that takes state s to the same low 24 bits as another
 * (found by the birthday paradox among 8192 random blocks) makes a pair,
 * and 16 such pairs in a row give 65,536 pieces of 48 bytes that all shared
 * one slot of the piece table (a table of up to 2^24 slots) under the
 * fixed hash of before: each insert probed the whole cluster, 2e9 probes,
 * 21.3 s of CPU to load. The table now hashes with a random key (a
 * polynomial modulo 2^61 - 1, then multiply-shift), so no file can aim at
 * a slot: measured here 1.05 s of CPU (release, Emerald Rapids VM),
 * asserted under 12 s (10x and more; the colliding load took 21 s, and
 * doubling the pieces would take four times that). */
static uint32_t fnv_low24(uint32_t s, const unsigned char *b, int n)
{
    for (int i = 0; i < n; i++)
        s = (uint32_t)(((uint64_t)(s ^ b[i]) * 0x100000001b3ull) & 0xffffff);
    return s;
}

static int by_low24(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

Test(tokenizer, llama2c_colliding_pieces_are_n)
{
    enum { STAGES = 16, BLOCK = 3, TRIES = 8192, N = 1 << STAGES, LEN = STAGES * BLOCK };
    unsigned char pair[STAGES][2][BLOCK];
    uint64_t *cand = malloc(TRIES * sizeof *cand);
    cr_assert(cand);
    tu_rng_seed(23);
    uint32_t state = (uint32_t)(0xcbf29ce484222325ull & 0xffffff);
    for (int j = 0; j < STAGES; j++) {
        int found = 0;
        while (!found) {
            for (int i = 0; i < TRIES; i++) { /* (low 24 bits after) << 24 | block */
                uint32_t blk = tu_rng() & 0xffffff;
                unsigned char b[BLOCK] = {(unsigned char)blk, (unsigned char)(blk >> 8),
                                          (unsigned char)(blk >> 16)};
                cand[i] = (uint64_t)fnv_low24(state, b, BLOCK) << 24 | blk;
            }
            qsort(cand, TRIES, sizeof *cand, by_low24);
            for (int i = 1; i < TRIES && !found; i++)
                if (cand[i] >> 24 == cand[i - 1] >> 24 && cand[i] != cand[i - 1]) {
                    for (int k = 0; k < 2; k++)
                        for (int q = 0; q < BLOCK; q++)
                            pair[j][k][q] = (unsigned char)(cand[i - k] >> (8 * q));
                    state = (uint32_t)(cand[i] >> 24);
                    found = 1;
                }
        }
    }
    free(cand);
    size_t cap = 4 + (size_t)(3 + 256 + N) * (8 + LEN), at = 4;
    unsigned char *buf = malloc(cap);
    cr_assert(buf);
    put32(buf, LEN);
    at = put_token(buf, at, 0, "<unk>", 5);
    at = put_token(buf, at, 0, "<s>", 3);
    at = put_token(buf, at, 0, "</s>", 4);
    for (int b = 0; b < 256; b++) {
        char p[8];
        snprintf(p, sizeof p, "<0x%02X>", b);
        at = put_token(buf, at, 0, p, 6);
    }
    char piece[LEN];
    for (int i = 0; i < N; i++) { /* token 259 + i: block j is pair j's (bit j of i) */
        for (int j = 0; j < STAGES; j++)
            memcpy(piece + BLOCK * j, pair[j][(i >> j) & 1], BLOCK);
        cr_assert_eq(fnv_low24((uint32_t)(0xcbf29ce484222325ull & 0xffffff),
                               (const unsigned char *)piece, LEN), state);
        at = put_token(buf, at, (float)-i, piece, LEN);
    }
    tu_write_file(tu_path("collide.bin"), buf, at);
    free(buf);
    char spec[4200];
    snprintf(spec, sizeof spec, "llama2c:%s", tu_path("collide.bin"));
    double t0 = tu_cpu_seconds();
    linattn_tokenizer *t = load_ok(spec);
    double dt = tu_cpu_seconds() - t0;
    cr_assert_eq(linattn_tokenizer_vocab(t), 259 + N);
    for (int i = 0; i < N; i += 4097) { /* the table holds each piece, its own */
        for (int j = 0; j < STAGES; j++)
            memcpy(piece + BLOCK * j, pair[j][(i >> j) & 1], BLOCK);
        const char *out = NULL;
        size_t n = 0;
        cr_assert_eq(linattn_tokenizer_decode(t, 259, 259 + i, &out, &n), LINATTN_OK,
                     "%s", linattn_last_error());
        cr_assert(n == LEN && memcmp(out, piece, LEN) == 0, "token %d: %zu bytes", 259 + i, n);
    }
    fprintf(stderr, "%d pieces sharing FNV-1a's low 24 bits: %.2f s CPU to load\n", N, dt);
    cr_assert_lt(dt, 12.0, "%d colliding pieces took %.1f s to load", N, dt);
    linattn_tokenizer_free(t);
}

/* A plain BPE tokenizer.json (no pre-tokenizer, no merges) of the
 * characters "<|r0123456789>abcdxy", 60,000 added tokens "<|rN|>", and a few
 * whose contents overlap ("ab", "abc", "bcd", 'x' x 5000). Trying every
 * added token at every '<' cost 60,000 comparisons a byte (50,000 '<': a
 * minute and more); the automaton costs one step a byte: the whole well
 * under 1 s of CPU, asserted under 10 s. */
Test(tokenizer, hf_many_added_tokens_are_n)
{
    enum { ADDED = 60000, TEXT = 50000, LONG = 5000 };
    static const char chars[] = "<|r0123456789>abcdxy";
    size_t cap = (size_t)ADDED * 64 + 3 * LONG, at = 0;
    char *json = malloc(cap);
    cr_assert(json);
    at += (size_t)snprintf(json + at, cap - at, "{\"model\": {\"type\": \"BPE\", \"vocab\": {");
    for (int i = 0; chars[i]; i++) /* character i: id i */
        at += (size_t)snprintf(json + at, cap - at, "%s\"%c\": %d", i ? ", " : "", chars[i], i);
    at += (size_t)snprintf(json + at, cap - at, "}, \"merges\": []}, \"added_tokens\": ["
                           "{\"id\": 100, \"content\": \"ab\"}, {\"id\": 101, \"content\": "
                           "\"abc\"}, {\"id\": 102, \"content\": \"bcd\"}, {\"id\": 103, "
                           "\"content\": \"");
    memset(json + at, 'x', LONG);
    at += LONG;
    at += (size_t)snprintf(json + at, cap - at, "\"}");
    for (int i = 0; i < ADDED; i++)
        at += (size_t)snprintf(json + at, cap - at, ", {\"id\": %d, \"content\": \"<|r%d|>\"}",
                               200 + i, i);
    at += (size_t)snprintf(json + at, cap - at, "]}");
    tu_write_file(tu_path("tokenizer.json"), json, at);
    char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", tu_path("tokenizer.json"));
    linattn_tokenizer *t = load_ok(spec);

    /* longest first where several start at a byte; found across the
     * windows the automaton reads (the 5000-byte one twice, then bytes) */
    expect_ids(t, "abcd", 0, (int[]){101, 17}, 2);
    expect_ids(t, "xbcd", 0, (int[]){18, 102}, 2);
    expect_ids(t, "ab<|r12|>y<|r59999|><|r60000|>", 0,
               (int[]){100, 200 + 12, 19, 200 + 59999, 0, 1, 2, 9, 3, 3, 3, 3, 1, 13}, 14);
    char *x = malloc(2 * LONG + 3);
    memset(x, 'x', 2 * LONG + 3);
    int xi[8];
    size_t n = 0;
    cr_assert_eq(linattn_tokenizer_encode(t, x, 2 * LONG + 3, 0, xi, 8, &n), LINATTN_OK);
    cr_assert_eq(n, 5);
    cr_assert(xi[0] == 103 && xi[1] == 103 && xi[2] == 18 && xi[3] == 18 && xi[4] == 18);
    x[0] = 'y'; /* a match that starts in one window and ends in the next */
    cr_assert_eq(linattn_tokenizer_encode(t, x, LONG + 1, 0, xi, 8, &n), LINATTN_OK);
    cr_assert(n == 2 && xi[0] == 19 && xi[1] == 103, "%zu tokens: %d %d", n, xi[0], xi[1]);

    char *s = malloc(TEXT + 16);
    memset(s, '<', TEXT);
    memcpy(s + TEXT, "<|r7|>", 6);
    int *ids = malloc((TEXT + 1) * sizeof *ids);
    double t0 = seconds();
    cr_assert_eq(linattn_tokenizer_encode(t, s, TEXT + 6, 0, ids, TEXT + 1, &n), LINATTN_OK, "%s",
                 linattn_last_error());
    double dt = seconds() - t0;
    cr_assert_eq(n, TEXT + 1);
    cr_assert(ids[0] == 0 && ids[TEXT - 1] == 0 && ids[TEXT] == 207);
    cr_assert(dt < 10.0, "50,000 bytes against 60,000 added tokens took %.1f s", dt);
    /* a character without a token: the error says where */
    cr_assert_eq(linattn_tokenizer_encode(t, "ab<Z", 4, 0, NULL, 0, &n), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "at byte 3 (bytes 5a)"), "%s", linattn_last_error());
    linattn_tokenizer_free(t);
    free(ids);
    free(s);
    free(x);
    free(json);
}

/* AddressSanitizer keeps freed memory in quarantine: RSS says nothing there */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_MEANS_NOTHING 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RSS_MEANS_NOTHING 1
#endif
#endif
#ifndef RSS_MEANS_NOTHING
#define RSS_MEANS_NOTHING 0
#endif

static long peak_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* A sentencepiece tokenizer without a word split (Llama 2's layout) makes a
 * text one word. It is merged in runs cut where no merge can join the two
 * sides (before each "▁" here: no piece holds "b▁"), so the ids are those
 * of one run and the working memory is that of a run: the peak grows by a
 * few bytes a byte of text (the text as pieces, the tokens), where one run
 * over the whole took about 40 (4 MB of text: 160 MB and more). */
Test(tokenizer, hf_long_word_merged_in_runs)
{
    write_sp(tu_path("tokenizer.json"), "null",
             "{\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\","
             " \"prepend_scheme\": \"first\", \"split\": false}");
    char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", tu_path("tokenizer.json"));
    linattn_tokenizer *t = load_ok(spec);
    enum { WORDS = 1400000 }; /* "ab " each: 4.2 MB */
    size_t len = 3 * (size_t)WORDS;
    char *s = malloc(len);
    int *ids = malloc((WORDS + 1) * sizeof *ids);
    cr_assert(s && ids);
    for (size_t i = 0; i < WORDS; i++)
        memcpy(s + 3 * i, "ab ", 3);
    memset(ids, 0, (WORDS + 1) * sizeof *ids);
    long before = peak_rss_kb();
    size_t n = 0;
    cr_assert_eq(linattn_tokenizer_encode(t, s, len, 0, ids, WORDS + 1, &n), LINATTN_OK, "%s",
                 linattn_last_error());
    long grew = peak_rss_kb() - before;
    cr_assert_eq(n, WORDS + 1); /* ▁ab each, then the last space's ▁ */
    for (size_t i = 0; i < WORDS; i++)
        cr_assert_eq(ids[i], 11, "token %zu is %d", i, ids[i]);
    cr_assert_eq(ids[WORDS], 6);
    cr_assert(RSS_MEANS_NOTHING || grew * 1024 < 12 * (long)len,
              "the peak grew by %ld kB for %zu bytes", grew, len);
    linattn_tokenizer_free(t);
    free(s);
    free(ids);
}

/* A Metaspace replacement that does not fit (8 bytes or more), an empty one
 * and an unknown prepend_scheme are refused, naming the key and the value. */
Test(tokenizer, hf_metaspace_settings_refused)
{
    char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", tu_path("tokenizer.json"));
    write_sp(tu_path("tokenizer.json"), "null",
             "{\"type\": \"Metaspace\", \"replacement\": \"LONGREPLACEMENT\"}");
    load_fails(spec, LINATTN_ERR_FORMAT, "tokenizer.json: pre_tokenizer Metaspace: replacement "
               "'LONGREPLACEMENT'", "1 to 7 bytes");
    write_sp(tu_path("tokenizer.json"), "null",
             "{\"type\": \"Metaspace\", \"replacement\": \"\"}");
    load_fails(spec, LINATTN_ERR_FORMAT, "tokenizer.json: pre_tokenizer Metaspace: replacement ''",
               NULL);
    write_sp(tu_path("tokenizer.json"), "null",
             "{\"type\": \"Metaspace\", \"replacement\": 7}");
    load_fails(spec, LINATTN_ERR_FORMAT, "replacement (not a string)", NULL);
    write_sp(tu_path("tokenizer.json"), "null",
             "{\"type\": \"Metaspace\", \"prepend_scheme\": \"bogus\"}");
    load_fails(spec, LINATTN_ERR_FORMAT, "tokenizer.json: pre_tokenizer Metaspace: "
               "prepend_scheme 'bogus'", "\"always\", \"first\" or \"never\"");
    write_sp(tu_path("tokenizer.json"), "null",
             "{\"type\": \"Metaspace\", \"prepend_scheme\": \"never\", \"replacement\": \"_\"}");
    linattn_tokenizer *t = load_ok(spec);
    linattn_tokenizer_free(t);
}

/* Encoding a text in parts, cut where linattn_tokenizer_cut says, gives the
 * whole text's tokens, for every part size. */
static void check_parts(const linattn_tokenizer *t, const char *text, size_t len)
{
    size_t cap = 8 * len + 16, n = 0;
    int *whole = malloc(cap * sizeof *whole), *part = malloc(cap * sizeof *part);
    cr_assert(whole && part);
    cr_assert_eq(linattn_tokenizer_encode(t, text, len, 1, whole, cap, &n), LINATTN_OK, "%s",
                 linattn_last_error());
    static const size_t wants[] = {0, 1, 2, 3, 5, 8, 13, 100};
    for (size_t w = 0; w < sizeof wants / sizeof *wants; w++) {
        size_t from = 0, m = 0, parts = 0;
        while (from < len || parts == 0) {
            size_t to = linattn_tokenizer_cut(t, text, len, from, wants[w]);
            cr_assert((to > from || len == 0) && to <= len, "cut %zu after %zu of %zu", to, from,
                      len);
            size_t k = 0;
            cr_assert_eq(linattn_tokenizer_encode_part(t, text, from, to, 1, part + m, cap - m, &k),
                         LINATTN_OK, "%s", linattn_last_error());
            m += k;
            from = to;
            parts++;
        }
        cr_assert_eq(m, n, "%s: want %zu: %zu tokens in %zu parts, whole %zu ('%.*s')",
                     linattn_tokenizer_name(t), wants[w], m, parts, n, (int)len, text);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(part[i], whole[i], "%s: want %zu: token %zu ('%.*s')",
                         linattn_tokenizer_name(t), wants[w], i, (int)len, text);
    }
    free(whole);
    free(part);
}

/* Random texts of the pieces in words[] joined. */
static void check_parts_random(const linattn_tokenizer *t, const char *const *words, int nwords,
                               int *cuts)
{
    char text[512];
    tu_rng_seed(7);
    for (int round = 0; round < 300; round++) {
        size_t len = 0;
        int count = (int)(tu_rng() % 40);
        for (int i = 0; i < count; i++) {
            const char *w = words[tu_rng() % (uint32_t)nwords];
            size_t l = strlen(w);
            if (len + l >= sizeof text)
                break;
            memcpy(text + len, w, l);
            len += l;
        }
        check_parts(t, text, len);
        *cuts += linattn_tokenizer_cut(t, text, len, 0, 1) < len;
    }
}

Test(tokenizer, parts_give_the_whole_texts_tokens)
{
    char spec[4200];
    static const char *const l2c_text[] = {" ", "a", "b", "c", "ab", "bc", "\xc3\xa9", "x", "ca",
                                           "\n", "A"};
    static const char *const gpt2_text[] = {" ", "a", "b", "c", "ab", "!", "\n", "  ",
                                            "<|endoftext|>", "\xc3\xa9", "b c"};
    static const char *const sp_text[] = {" ", "a", "b", "ab", "A", "\xc3\xbc", "\n", "cc", "<s>",
                                          "  "};
    int cuts = 0;

    linattn_tokenizer *t = load_l2c();
    check_parts_random(t, l2c_text, 11, &cuts);
    linattn_tokenizer_free(t);
    cr_assert(cuts > 0, "llama2c: no text was cut");

    const char *path = tu_path("tokenizer.json");
    snprintf(spec, sizeof spec, "hf:%s", path);
    for (int variant = 0; variant < 3; variant++) {
        write_gpt2(path, 0);
        if (variant) { /* add_prefix_space; without the regex split */
            size_t sz;
            char *json = tu_read_file(path, &sz);
            char *at = strstr(json, variant == 1 ? "\"add_prefix_space\": false"
                                                 : "\"use_regex\": true");
            cr_assert(at);
            memcpy(at, variant == 1 ? "\"add_prefix_space\": true " : "\"use_regex\":false",
                   variant == 1 ? 25 : 17);
            tu_write_text(path, json);
            free(json);
        }
        cuts = 0;
        t = load_ok(spec);
        check_parts_random(t, gpt2_text, 11, &cuts);
        linattn_tokenizer_free(t);
        cr_assert(cuts > 0, "byte-level %d: no text was cut", variant);
    }

    static const char *const pre[] = {
        "{\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"prepend_scheme\":"
        " \"first\", \"split\": false}",
        "{\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"prepend_scheme\":"
        " \"always\", \"split\": true}",
        "null"};
    for (int variant = 0; variant < 3; variant++) {
        write_sp(path, variant < 2 ? "null"
                                   : "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": "
                                     "\"Prepend\", \"prepend\": \"\xe2\x96\x81\"}, {\"type\": "
                                     "\"Replace\", \"pattern\": {\"String\": \" \"}, \"content\":"
                                     " \"\xe2\x96\x81\"}]}",
                 pre[variant]);
        cuts = 0;
        t = load_ok(spec);
        check_parts_random(t, sp_text, 10, &cuts);
        linattn_tokenizer_free(t);
        cr_assert(cuts > 0, "sentencepiece %d: no text was cut", variant);
    }

    t = load_ok("bytes");
    check_parts(t, "abc", 3);
    cr_assert_eq(linattn_tokenizer_cut(t, "abc", 3, 0, 1), 1);
    linattn_tokenizer_free(t);
}

/* llama2.c models separate stories with BOS (id 1) and never write EOS:
 * BOS ends the text as in run.c, unless --ignore-eos (which goes on). */
Test(tokenizer_cli, llama2c_bos_ends_the_text)
{
    write_tokbin("tokenizer.bin");
    const char *ini = write_model("m.ini", 300, "tokenizer = llama2c:tokenizer.bin\n", NULL);
    tu_run_result r = tu_run("generate", ini, "-p", "a", "-n", "5", "--logit-bias", "1=1000",
                             "--print-ids", NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "1\n", "BOS ends the text: '%s'", r.out);
    tu_run_free(&r);
    r = tu_run("generate", ini, "-p", "a", "-n", "5", "--logit-bias", "1=1000", "--print-ids",
               "--ignore-eos", NULL);
    tu_assert_ok(&r);
    cr_assert_str_eq(r.out, "1 1 1 1 1\n", "--ignore-eos goes on: '%s'", r.out);
    tu_run_free(&r);
}
