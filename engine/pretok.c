/* pretok.c: pre-tokenizer splits by regular expression (PCRE2: UTF-8, Unicode properties, JIT), and llama.cpp's BPE pre-types as sequences of them. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>

#include "tokenizer.h"

/* ------------------------------------------------------------------------ */
/* The patterns real tokenizers use                                          */
/* ------------------------------------------------------------------------ */

/* GPT-2's, as the Hugging Face ByteLevel pre-tokenizer has it (llama.cpp's
 * lacks the last "|\s+": the same pieces, as a run of spaces it leaves
 * unmatched is a piece of its own anyway). */
const char tok_gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* llama.cpp's (src/llama-vocab.cpp, llm_tokenizer_bpe), verbatim: where it
 * adapted a tokenizer.json pattern for std::regex ((?i:...) spelt out as
 * [sS]...), the adapted one, so that the ids are llama.cpp's. */
static const char P_GPT2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
static const char P_LLAMA3[] =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char P_JAIS2[] =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|"
    "\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}";
static const char P_QWEN2[] =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char P_QWEN35[] =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char P_SEED_CODER[] =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char P_BAILING[] =
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?"
    "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
static const char P_EXAONE_MOE[] =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?"
    "[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
static const char P_TEKKEN[] =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|"
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?"
    "[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char P_GPT4O[] =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+" CONTRACTIONS "?|"
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*" CONTRACTIONS "?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char P_BLOOM[] = " ?[^(\\s|.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81"
                              "\xe0\xa5\xa4\xdb\x94\xd8\x8c)]+"; /* …。，、।۔، */
static const char P_NEWLINE[] = "[\r\n]";
static const char P_DIGIT[] = "\\p{N}";
static const char P_DIGITS[] = "\\p{N}+";
static const char P_DIGITS3[] = "\\p{N}{1,3}";
static const char P_THREE[] = "[0-9][0-9][0-9]";
static const char P_PUNCT[] = "[\\p{P}\\$\\+<=>\\^~\\|]+";
static const char P_PUNCT_FALCON[] = "[\\p{P}\\$\\+<=>\\^~\\|`]+";
static const char P_LETTERS_S[] = "\\s?\\p{L}+";
static const char P_PUNCT_S[] = "\\s?\\p{P}+";
/* [一-龥ࠀ-一가-퟿]+, as tokenizer.json has it. llama.cpp matches it with
 * every non-ASCII space of the text (U+3000, ...) turned into U+000B, so
 * that those in U+0800..U+4E00 are not taken: for its ids, P_CJK says so. */
static const char P_CJK_HF[] = "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-"
                               "\xed\x9f\xbf]+";
static const char P_CJK[] = "(?:(?![\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}"
                            "\\x{205f}\\x{3000}])[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-"
                            "\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf])+";
/* 一-龥぀-ゟ゠-ヿ */
static const char P_CJK_KANA[] = "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-"
                                 "\xe3\x83\xbf]+";
static const char P_DEEPSEEK3[] =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
    "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
/* deepseek-llm's letters (its tokenizer.json's list of letter ranges) and
 * punctuation, as UTF-8 */
static const char P_DS_LETTERS[] =
    "\\s?[A-Za-z\xc2\xb5\xc3\x80-\xc3\x96\xc3\x98-\xc3\xb6\xc3\xb8-\xc6\xba\xc6\xbc-\xc6\xbf"
    "\xc7\x84-\xca\x93\xca\x95-\xca\xaf\xcd\xb0-\xcd\xb3\xcd\xb6\xcd\xb7\xcd\xbb-\xcd\xbd"
    "\xcd\xbf\xce\x86\xce\x88-\xce\x8a\xce\x8c\xce\x8e-\xce\xa1\xce\xa3-\xcf\xb5\xcf\xb7-"
    "\xd2\x81\xd2\x8a-\xd4\xaf\xd4\xb1-\xd5\x96\xe1\x82\xa0-\xe1\x83\x85\xe1\x8e\xa0-"
    "\xe1\x8f\xb5\xe1\x8f\xb8-\xe1\x8f\xbd\xe1\xb2\x90-\xe1\xb2\xba\xe1\xb2\xbd-\xe1\xb2\xbf"
    "\xe1\xb4\x80-\xe1\xb4\xab\xe1\xb5\xab-\xe1\xb5\xb7\xe1\xb5\xb9-\xe1\xb6\x9a\xe1\xb8\x80-"
    "\xe1\xbc\x95\xe1\xbc\x98-\xe1\xbc\x9d\xe1\xbc\xa0-\xe1\xbd\x85\xe1\xbd\x88-\xe1\xbd\x8d"
    "\xe1\xbd\x90-\xe1\xbd\x97\xe1\xbd\x99\xe1\xbd\x9b\xe1\xbd\x9d\xe1\xbd\x9f-\xe1\xbd\xbd"
    "\xe1\xbe\x80-\xe1\xbe\xb4\xe1\xbe\xb6-\xe1\xbe\xbc\xe1\xbe\xbe\xe1\xbf\x82-\xe1\xbf\x84"
    "\xe1\xbf\x86-\xe1\xbf\x8c\xe1\xbf\x90-\xe1\xbf\x93\xe1\xbf\x96-\xe1\xbf\x9b\xe1\xbf\xa0-"
    "\xe1\xbf\xac\xe1\xbf\xb2-\xe1\xbf\xb4\xe1\xbf\xb6-\xe1\xbf\xbc\xe2\x84\x82\xe2\x84\x87"
    "\xe2\x84\x8a-\xe2\x84\x93\xe2\x84\x95\xe2\x84\x99-\xe2\x84\x9d\xe2\x84\xa4\xe2\x84\xa6"
    "\xe2\x84\xa8\xe2\x84\xaa-\xe2\x84\xad\xe2\x84\xaf-\xe2\x84\xb4\xe2\x84\xb9\xe2\x84\xbc-"
    "\xe2\x84\xbf\xe2\x85\x85-\xe2\x85\x89\xe2\x85\x8e\xe2\x86\x83\xe2\x86\x84\xe2\xb0\x80-"
    "\xe2\xb1\xbb\xe2\xb1\xbe-\xe2\xb3\xa4\xe2\xb3\xab-\xe2\xb3\xae\xe2\xb3\xb2\xe2\xb3\xb3"
    "\xea\x99\x80-\xea\x99\xad\xea\x9a\x80-\xea\x9a\x9b\xea\x9c\xa2-\xea\x9d\xaf\xea\x9d\xb1-"
    "\xea\x9e\x87\xea\x9e\x8b-\xea\x9e\x8e\xea\xad\xb0-\xea\xae\xbf\xef\xac\x80-\xef\xac\x86"
    "\xef\xac\x93-\xef\xac\x97\xef\xbc\xa1-\xef\xbc\xba\xef\xbd\x81-\xef\xbd\x9a\xf0\x90\x90"
    "\x80-\xf0\x90\x91\x8f\xf0\x90\x92\xb0-\xf0\x90\x93\x93\xf0\x90\x93\x98-\xf0\x90\x93\xbb"
    "\xf0\x90\xb2\x80-\xf0\x90\xb2\xb2\xf0\x90\xb3\x80-\xf0\x90\xb3\xb2\xf0\x91\xa2\xa0-\xf0"
    "\x91\xa3\x9f\xf0\x9e\xa4\x80-\xf0\x9e\xa5\x83]+";
/* \s?[!-/:-~！-／：-～‘-‟　-。]+, as tokenizer.json has it; for llama.cpp's
 * ids (see P_CJK) without U+3000, the one space in it: 、-。 */
static const char P_DS_PUNCT_HF[] = "\\s?[!-/:-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-"
                                    "\xef\xbd\x9e\xe2\x80\x98-\xe2\x80\x9f\xe3\x80\x80-"
                                    "\xe3\x80\x82]+";
static const char P_DS_PUNCT[] = "\\s?[!-/:-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-\xef\xbd\x9e"
                                 "\xe2\x80\x98-\xe2\x80\x9f\xe3\x80\x81-\xe3\x80\x82]+";
const char *const tok_pre_adapted[][2] = {{P_CJK_HF, P_CJK}, {P_DS_PUNCT_HF, P_DS_PUNCT},
                                          {NULL, NULL}};
static const char P_END_SPACES[] = "\\s+$";
static const char P_CHAM_SENTINEL[] = "<sentinel:[0-9]+>";
static const char P_CHAM_IMAGE[] = "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z";
static const char P_CHAM_SPACE[] = "([\\t\\n]|    |  )";
static const char P_CHAM_PUNCT[] = "[\\p{P}!-/:-@\\[-`{-~]";

/* What a pattern does to a text "...a b..." (a, b ASCII letters) around
 * the space: SPLIT_CUT_BOUNDARY, a piece ends after a and the next starts
 * at the space, whatever comes before a (the pieces on each side are those
 * of each side alone); SPLIT_CUT_NEUTRAL, no match touches a, the space or
 * b (they stay inside one piece between matches); SPLIT_CUT_UNKNOWN, any
 * other pattern (a text is then never cut). */
static const struct {
    const char *pattern;
    int cut;
} known[] = {
    {tok_gpt2_pattern, SPLIT_CUT_BOUNDARY},
    {P_GPT2, SPLIT_CUT_BOUNDARY},
    {P_LLAMA3, SPLIT_CUT_BOUNDARY},
    {P_QWEN2, SPLIT_CUT_BOUNDARY},
    {P_QWEN35, SPLIT_CUT_BOUNDARY},
    {P_SEED_CODER, SPLIT_CUT_BOUNDARY},
    {P_BAILING, SPLIT_CUT_BOUNDARY},
    /* the forms tokenizer.json files spell them in */
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", SPLIT_CUT_BOUNDARY},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", SPLIT_CUT_BOUNDARY},
    {P_LETTERS_S, SPLIT_CUT_BOUNDARY},
    {P_DS_LETTERS, SPLIT_CUT_BOUNDARY},
    {P_NEWLINE, SPLIT_CUT_NEUTRAL},
    {P_DIGIT, SPLIT_CUT_NEUTRAL},
    {P_DIGITS, SPLIT_CUT_NEUTRAL},
    {P_DIGITS3, SPLIT_CUT_NEUTRAL},
    {P_THREE, SPLIT_CUT_NEUTRAL},
    {P_PUNCT, SPLIT_CUT_NEUTRAL},
    {P_PUNCT_FALCON, SPLIT_CUT_NEUTRAL},
    {P_PUNCT_S, SPLIT_CUT_NEUTRAL},
    {P_CJK, SPLIT_CUT_NEUTRAL},
    {P_CJK_HF, SPLIT_CUT_NEUTRAL},
    {P_CJK_KANA, SPLIT_CUT_NEUTRAL},
};

/* llama.cpp's pre-types (tokenizer.ggml.pre) whose pre-tokenization is
 * regular expressions alone, by the names llama.cpp gives them
 * (llama_vocab::impl::load); each a list of patterns, applied in turn,
 * every match and the text between matches a piece (Isolated). The
 * others (kimi-k2, afmoe, tiny_aya, superbpe: code of llama.cpp's own;
 * gemma4, sarvam-moe: no byte-level form; the ones that also change
 * bos or add a separator) are refused by name. */
#define PATS(...) (const char *const[]){__VA_ARGS__, NULL}
static const tok_pre_type pre_types[] = {
    {"default", PATS(P_PUNCT, P_GPT2, P_DIGITS, P_THREE), 0, 0},
    {"llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2 jina-v5-nano",
     PATS(P_LLAMA3), 1, 1},
    {"dbrx smaug-bpe", PATS(P_LLAMA3), 0, 0},
    {"jais-2", PATS(P_JAIS2), 0, 0},
    {"deepseek-llm", PATS(P_NEWLINE, P_DS_LETTERS, P_DS_PUNCT, P_END_SPACES, P_CJK, P_DIGITS),
     0, 0},
    {"deepseek-v3 hunyuan-dense joyai-llm", PATS(P_DIGITS3, P_CJK_KANA, P_DEEPSEEK3), 0, 0},
    {"deepseek-coder", PATS(P_NEWLINE, P_LETTERS_S, P_PUNCT_S, P_CJK, P_DIGIT), 0, 0},
    {"falcon", PATS(P_PUNCT_FALCON, P_GPT2, P_THREE), 0, 0},
    {"starcoder refact command-r smollm codeshell exaone minerva-7b", PATS(P_DIGIT, P_GPT2), 0, 0},
    {"gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum modern-bert mpt "
     "olmo jais trillion granite-docling exaone4", PATS(P_GPT2), 0, 0},
    {"qwen2 deepseek-r1-qwen kormo f2llmv2 megrez stablelm2 hunyuan solar-open", PATS(P_QWEN2),
     0, 0},
    {"qwen35", PATS(P_QWEN35), 0, 0},
    {"poro-chat bloom gpt3-finnish", PATS(P_BLOOM), 0, 0},
    {"viking", PATS(P_BLOOM, P_DIGIT), 0, 0},
    {"tekken", PATS(P_TEKKEN), 1, 1},
    {"chameleon", PATS(P_CHAM_SENTINEL, P_CHAM_IMAGE, P_CHAM_SPACE, P_DIGIT, P_CHAM_PUNCT, P_GPT2),
     0, 1},
    {"gpt-4o llama4 kanana2 minimax-m2", PATS(P_GPT4O), 0, 0},
    {"seed-coder", PATS(P_SEED_CODER), 0, 0},
    {"grok-2", PATS(P_QWEN2), 0, 0},
    {"bailingmoe bailingmoe2 llada-moe", PATS(P_BAILING), 0, 0},
    {"exaone-moe", PATS(P_EXAONE_MOE), 0, 0},
};

const tok_pre_type *tok_pre_type_find(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof pre_types / sizeof pre_types[0]; i++)
        for (const char *p = pre_types[i].names; *p;) {
            size_t n = strcspn(p, " ");
            if (n == len && !memcmp(p, name, len))
                return &pre_types[i];
            p += n + (p[n] == ' ');
        }
    return NULL;
}

/* Whether a tokenizer.json pattern p is llama.cpp's q: the same text, or
 * the form llama.cpp rewrote it from (tok_pre_adapted; case-insensitive
 * contractions spelt out), or GPT-2's as the ByteLevel pre-tokenizer has
 * it (the same pieces as llama.cpp's, see tok_gpt2_pattern). */
static int same_pattern(const char *p, const char *q)
{
    static const char ci[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
    if (!strcmp(p, q) || (!strcmp(p, tok_gpt2_pattern) && q == P_GPT2))
        return 1;
    for (int i = 0; tok_pre_adapted[i][0]; i++)
        if (!strcmp(p, tok_pre_adapted[i][0]) && !strcmp(q, tok_pre_adapted[i][1]))
            return 1;
    size_t n = sizeof ci - 1, c = sizeof CONTRACTIONS - 1;
    return !strncmp(p, ci, n) && !strncmp(q, CONTRACTIONS, c) && !strcmp(p + n, q + c);
}

const char *tok_pre_type_name(const linattn_tokenizer *t, size_t *len)
{
    for (int i = 0; i < t->n_split; i++)
        if (t->split[i].literal || t->split[i].invert || t->split[i].behavior != SPLIT_ISOLATED)
            return NULL;
    for (size_t k = 0; k < sizeof pre_types / sizeof pre_types[0]; k++) {
        const tok_pre_type *p = &pre_types[k];
        int n = 0;
        while (p->patterns[n])
            n++;
        if (n != t->n_split || !p->ignore_merges != !t->ignore_merges)
            continue;
        int same = 1;
        for (int i = 0; i < n && same; i++)
            same = same_pattern(t->split[i].pattern, p->patterns[i]);
        if (same) {
            *len = strcspn(p->names, " ");
            return p->names;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Compiling                                                                 */
/* ------------------------------------------------------------------------ */

/* PCRE2's memory is the engine's (counted, and failed on purpose by the
 * allocation tests). */
static _Thread_local int pcre_alloc_failed;

static void *pcre_alloc(size_t n, void *data)
{
    (void)data;
    void *p = mem_alloc(n);
    pcre_alloc_failed |= !p;
    return p;
}

static void pcre_free(void *p, void *data)
{
    (void)data;
    mem_free(p);
}

linattn_status tok_split_add(linattn_tokenizer *t, const char *where, const char *pattern,
                             int literal, split_behavior behavior, int invert)
{
    if (t->n_split >= TOK_MAX_SPLITS)
        return linattn_err(LINATTN_ERR_UNSUPPORTED, "%s: more than %d splits", where,
                           TOK_MAX_SPLITS);
    pcre2_general_context *gc = pcre2_general_context_create(pcre_alloc, pcre_free, NULL);
    pcre2_compile_context *cc = gc ? pcre2_compile_context_create(gc) : NULL;
    if (!cc) {
        pcre2_general_context_free(gc);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for its pattern", where);
    }
    /* MULTILINE: ^ and $ at line ends, as in Oniguruma's Ruby syntax (the
     * Hugging Face library's); MATCH_INVALID_UTF: a text that is not UTF-8
     * is matched all the same, its bad bytes matching nothing. */
    int err = 0;
    PCRE2_SIZE at = 0;
    uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
                    (literal ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_MULTILINE);
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &err, &at,
                                     cc);
    pcre2_compile_context_free(cc);
    pcre2_general_context_free(gc);
    if (!code) {
        PCRE2_UCHAR msg[160];
        if (pcre2_get_error_message(err, msg, sizeof msg) < 0)
            strcpy((char *)msg, "(no message)");
        return linattn_err(err == PCRE2_ERROR_HEAP_FAILED ? LINATTN_ERR_NOMEM : LINATTN_ERR_FORMAT,
                           "%s: pattern '%.80s': %s (at character %zu)", where, pattern,
                           (const char *)msg, (size_t)at);
    }
    /* JIT where the platform has it (the interpreter gives the same
     * matches); only the engine's memory running out is an error, not a
     * system that refuses executable memory */
    pcre_alloc_failed = 0;
    int jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    if (jit == PCRE2_ERROR_NOMEMORY && pcre_alloc_failed) {
        pcre2_code_free(code);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory compiling its pattern", where);
    }
    int cut = SPLIT_CUT_UNKNOWN;
    for (size_t i = 0; !literal && i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(pattern, known[i].pattern))
            cut = known[i].cut;
    char *copy = mem_alloc(strlen(pattern) + 1);
    if (!copy) {
        pcre2_code_free(code);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for its pattern", where);
    }
    strcpy(copy, pattern);
    t->split[t->n_split++] = (tok_split){code, behavior, invert, cut, copy, literal};
    return LINATTN_OK;
}

void tok_split_free(linattn_tokenizer *t)
{
    for (int i = 0; i < t->n_split; i++) {
        pcre2_code_free(t->split[i].code);
        mem_free(t->split[i].pattern);
    }
    t->n_split = 0;
}

int tok_split_can_cut(const linattn_tokenizer *t)
{
    for (int i = 0; i < t->n_split; i++) {
        const tok_split *sp = &t->split[i];
        if (sp->invert || sp->behavior != SPLIT_ISOLATED || sp->cut == SPLIT_CUT_UNKNOWN)
            return 0;
        if (sp->cut == SPLIT_CUT_BOUNDARY)
            return 1; /* the later splits see the same pieces */
    }
    return t->n_split == 0;
}

/* ------------------------------------------------------------------------ */
/* Splitting                                                                 */
/* ------------------------------------------------------------------------ */

linattn_status tok_split_begin(const linattn_tokenizer *t, void **md)
{
    *md = NULL;
    if (!t->n_split)
        return LINATTN_OK;
    /* one pair of offsets is all a split reads (what capture groups hold
     * is not used); the pattern's memory functions, so the engine's */
    if (!(*md = pcre2_match_data_create_from_pattern(t->split[0].code, NULL)))
        return linattn_err(LINATTN_ERR_NOMEM, "tokenizer_encode: out of memory for matching");
    return LINATTN_OK;
}

void tok_split_end(void *md)
{
    pcre2_match_data_free(md);
}

typedef struct run {
    const linattn_tokenizer *t;
    pcre2_match_data *md;
    const char *text; /* the text split, where offsets count from */
    size_t base;
    tok_piece_fn fn;
    void *ctx;
} run;

static linattn_status level(const run *r, int k, const char *s, size_t n);

/* The first match of split k in s[0..n) at or after from: 1 and its
 * [*a, *b), 0 for none. */
static linattn_status find(const run *r, int k, const char *s, size_t n, size_t from, int *found,
                           size_t *a, size_t *b)
{
    const pcre2_code *code = r->t->split[k].code;
    int rc = pcre2_match(code, (PCRE2_SPTR)s, n, from, 0, r->md, NULL);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter keeps its frames on the heap */
        rc = pcre2_match(code, (PCRE2_SPTR)s, n, from, PCRE2_NO_JIT, r->md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) {
        *found = 0;
        return LINATTN_OK;
    }
    if (rc < 0) {
        PCRE2_UCHAR msg[160];
        if (pcre2_get_error_message(rc, msg, sizeof msg) < 0)
            strcpy((char *)msg, "(no message)");
        return linattn_err(rc == PCRE2_ERROR_NOMEMORY ? LINATTN_ERR_NOMEM : LINATTN_ERR_INVALID,
                           "%s: pre-tokenizer split %d at byte %zu of the text: %s",
                           r->t->source, k, r->base + (size_t)(s + from - r->text),
                           (const char *)msg);
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
    *found = 1;
    *a = ov[0];
    *b = ov[1];
    return LINATTN_OK;
}

/* A piece of split k's output: the next split's input. */
static linattn_status piece(const run *r, int k, const char *s, size_t a, size_t b)
{
    return b > a ? level(r, k + 1, s + a, b - a) : LINATTN_OK;
}

/* Split k over s[0..n): the stretches between matches and the matches, in
 * order, grouped by the split's behaviour as Hugging Face's
 * NormalizedString::split groups them (a held piece is one a later stretch
 * may still grow). */
static linattn_status level(const run *r, int k, const char *s, size_t n)
{
    if (k == r->t->n_split)
        return r->fn(r->ctx, s, n);
    const tok_split *sp = &r->t->split[k];
    linattn_status st = LINATTN_OK;
    size_t at = 0, from = 0;  /* the end of the last match; where to look next */
    size_t ha = 0, hb = 0;    /* the held piece */
    int held = 0, prev = 0;   /* ...and whether the last stretch was a match */
    while (st == LINATTN_OK && at < n) {
        int found;
        size_t ma = n, mb = n;
        if ((st = find(r, k, s, n, from, &found, &ma, &mb)) != LINATTN_OK)
            break;
        if (found && ma == mb) { /* an empty match splits nothing: on past its character */
            if (ma >= n)
                found = 0, ma = mb = n;
            else {
                from = ma + 1; /* to the next character's first byte */
                while (from < n && ((unsigned char)s[from] & 0xC0) == 0x80)
                    from++;
                continue;
            }
        }
        /* the stretch [at, ma) (not a match), then the match [ma, mb) */
        for (int part = 0; part < 2 && st == LINATTN_OK; part++) {
            size_t a = part ? ma : at, b = part ? mb : ma;
            if (b <= a)
                continue;
            int m = part ^ sp->invert;
            switch (sp->behavior) {
            case SPLIT_ISOLATED:
                st = piece(r, k, s, a, b);
                break;
            case SPLIT_REMOVED:
                st = m ? LINATTN_OK : piece(r, k, s, a, b);
                break;
            case SPLIT_MERGED_PREV: /* a match after a stretch joins it */
                if (m && !prev && held)
                    hb = b;
                else {
                    if (held)
                        st = piece(r, k, s, ha, hb);
                    ha = a, hb = b, held = 1;
                }
                break;
            case SPLIT_MERGED_NEXT: /* a match before a stretch joins it */
                if (m) {
                    if (held)
                        st = piece(r, k, s, ha, hb);
                    ha = a, hb = b, held = 1;
                } else {
                    st = piece(r, k, s, held ? ha : a, b);
                    held = 0;
                }
                break;
            case SPLIT_CONTIGUOUS: /* matches side by side are one */
                if (held && m == prev)
                    hb = b;
                else {
                    if (held)
                        st = piece(r, k, s, ha, hb);
                    ha = a, hb = b, held = 1;
                }
                break;
            }
            prev = m;
        }
        if (!found)
            break;
        at = from = mb;
    }
    if (st == LINATTN_OK && held)
        st = piece(r, k, s, ha, hb);
    return st;
}

linattn_status tok_split_run(const linattn_tokenizer *t, void *md, const char *s, size_t n,
                             size_t base, tok_piece_fn fn, void *ctx)
{
    if (n == 0)
        return LINATTN_OK;
    run r = {t, md, s, base, fn, ctx};
    return level(&r, 0, s, n);
}
