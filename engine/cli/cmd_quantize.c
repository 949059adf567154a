/* cmd_quantize.c: `linattn quantize IN OUT --type T`: any model the engine reads, written as a GGUF file in ggml's block types. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const char usage[] =
    "usage: linattn quantize MODEL OUT --type TYPE [--config FILE]\n"
    "\n"
    "Writes MODEL (a GGUF file, a llama2.c checkpoint, a Hugging Face folder, or\n"
    "a config naming one of them or a safetensors file) to OUT as a GGUF file of\n"
    "architecture llama that llama.cpp reads: norms in F32, the matrices in TYPE.\n"
    "The vocabulary goes along as llama.cpp's converters write it: copied from a\n"
    "GGUF file; a llama2.c tokenizer.bin as model llama; a Hugging Face\n"
    "tokenizer.json as model gpt2 (byte-level BPE: its merges, and the\n"
    "tokenizer.ggml.pre whose patterns are its Split ones) or llama\n"
    "(sentencepiece form: scores from the merges' ranks), with its bos, eos,\n"
    "add_bos_token and tokenizer_config.json's chat_template. A tokenizer.json\n"
    "llama.cpp would tokenize otherwise is refused, naming what differs. OUT is\n"
    "written whole or not at all. The model must be llama-shaped: softmax\n"
    "attention without a window, rmsnorm before each block, SwiGLU, RoPE, no\n"
    "biases.\n"
    "\n"
    "  -t, --type TYPE   f32, f16, q8_0, q4_0, q4_k, q5_k, q6_k, or llama.cpp's\n"
    "                    mixes q4_k_m, q5_k_m (Q6_K for the output and for attn_v\n"
    "                    and ffn_down of some layers); a matrix whose rows are not\n"
    "                    whole blocks of TYPE gets Q8_0 or F16\n"
    "  --config FILE     with a MODEL file or folder: a config laid over it\n"
    "  -h, --help        this text\n"
    "\n"
    "Example: linattn quantize stories15M.bin stories15M-q8_0.gguf --type q8_0\n";

int cmd_quantize(int argc, char **argv)
{
    static const struct option opts[] = {
        {"type", required_argument, 0, 't'},
        {"config", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *type = NULL, *over = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":t:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': type = optarg; break;
        case 'c': over = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case ':': return cli_fail("quantize", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_fail("quantize", "unknown option '%s' (try 'linattn quantize --help')",
                            argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return cli_fail("quantize", "%s (try 'linattn quantize --help')",
                        argc - optind < 2 ? "expected MODEL and OUT" : "too many arguments");
    if (!type)
        return cli_fail("quantize", "--type is needed: one of %s", linattn_quantize_types());
    const char *in = argv[optind], *out = argv[optind + 1];
    linattn_config *cfg = malloc(sizeof *cfg);
    if (!cfg)
        return cli_fail("quantize", "out of memory");
    linattn_status st = cli_load_model(in, over, cfg, NULL, NULL);
    int vocab = 0;
    if (st == LINATTN_OK)
        st = linattn_quantize(cfg, out, type, &vocab);
    if (st != LINATTN_OK) {
        free(cfg);
        return cli_fail_status("quantize", st);
    }
    if (!vocab) /* the byte tokenizer: there is no vocabulary, and llama.cpp needs one */
        cli_warn("quantize", "%s: no vocabulary written (the model's tokenizer is bytes); "
                 "llama.cpp will not load the file", out);
    struct stat sb;
    printf("wrote %s: %s, %lld bytes\n", out, type, stat(out, &sb) == 0 ? (long long)sb.st_size : -1LL);
    free(cfg);
    return 0;
}
