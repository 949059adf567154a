/* test_chat.c: the chat formats (engine/cli/chat_template.c) against the texts their model families' own templates write, their recognition in Jinja templates, and tokenizer_config.json lookup. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/cli/chat_template.h"
#include "testutil.h"

TestSuite(chat, .init = tu_make_dir, .fini = tu_remove_dir);

static const cli_chat_msg conv[] = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Who?"}};

static void expect_render(cli_chat k, const cli_chat_msg *m, int n, int first, const char *want)
{
    char *got = NULL;
    size_t len = 0;
    cr_assert_eq(cli_chat_render(k, m, n, first, &got, &len), 0);
    cr_expect_eq(len, strlen(got));
    cr_expect_str_eq(got, want, "%s", cli_chat_name(k));
    free(got);
}

/* The conversation as each family's template writes it (the bos, where
 * there is one, comes from the tokenizer at the start of a stream). */
Test(chat, every_format_renders_as_its_template)
{
    expect_render(CLI_CHAT_PLAIN, conv, 4, 1, "Be brief.\nHi\nHello.\nWho?\n");
    expect_render(CLI_CHAT_CHATML, conv, 4, 1,
                  "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                  "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWho?<|im_end|>\n"
                  "<|im_start|>assistant\n");
    expect_render(CLI_CHAT_LLAMA3, conv, 4, 1,
                  "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nWho?<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_render(CLI_CHAT_LLAMA2, conv, 4, 1,
                  "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] Who? "
                  "[/INST]");
    expect_render(CLI_CHAT_MISTRAL, conv, 4, 1,
                  "[INST] Be brief.\n\nHi [/INST]Hello.</s><s>[INST] Who? [/INST]");
    expect_render(CLI_CHAT_ZEPHYR, conv, 4, 1,
                  "<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello.</s>\n"
                  "<|user|>\nWho?</s>\n<|assistant|>\n");
    expect_render(CLI_CHAT_PHI3, conv, 4, 1,
                  "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello.<|end|>\n"
                  "<|user|>\nWho?<|end|>\n<|assistant|>\n");
    expect_render(CLI_CHAT_GEMMA, conv, 4, 1,
                  "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
                  "Hello.<end_of_turn>\n<start_of_turn>user\nWho?<end_of_turn>\n"
                  "<start_of_turn>model\n");
}

/* A turn that continues a stream whose answer just ended (with the end
 * mark, its newline not written): what makes the two texts one. */
Test(chat, a_turn_continues_a_stream)
{
    const cli_chat_msg u = {"user", "Who?"};
    expect_render(CLI_CHAT_CHATML, &u, 1, 0,
                  "\n<|im_start|>user\nWho?<|im_end|>\n<|im_start|>assistant\n");
    expect_render(CLI_CHAT_LLAMA2, &u, 1, 0, "<s>[INST] Who? [/INST]");
    expect_render(CLI_CHAT_LLAMA3, &u, 1, 0,
                  "<|start_header_id|>user<|end_header_id|>\n\nWho?<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_render(CLI_CHAT_PLAIN, &u, 1, 0, "Who?\n");
    cr_expect_str_eq(cli_chat_end(CLI_CHAT_CHATML), "<|im_end|>");
    cr_expect_str_eq(cli_chat_end(CLI_CHAT_LLAMA3), "<|eot_id|>");
    cr_expect_str_eq(cli_chat_end(CLI_CHAT_GEMMA), "<end_of_turn>");
    cr_expect_str_eq(cli_chat_end(CLI_CHAT_PLAIN), "\n");
}

/* Families recognised in pieces of their published Jinja templates. */
Test(chat, templates_are_recognised)
{
    static const struct {
        const char *jinja;
        cli_chat want;
    } cases[] = {
        {"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n'", CLI_CHAT_CHATML},
         {"{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}",
         CLI_CHAT_LLAMA3},
        {"{{ bos_token + '[INST] ' + '<<SYS>>\\n' + system_message }}", CLI_CHAT_LLAMA2},
        {"{{ '[INST] ' + message['content'] + ' [/INST]' }}", CLI_CHAT_MISTRAL},
        {"{{ '<|user|>\\n' + message['content'] + eos_token }}", CLI_CHAT_ZEPHYR},
        {"{{'<|user|>' + '\\n' + message['content'] + '<|end|>' + '\\n'}}", CLI_CHAT_PHI3},
        {"{{ '<start_of_turn>' + role + '\\n' }}", CLI_CHAT_GEMMA},
        {"{{ message['content'] }}", CLI_CHAT_PLAIN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(cli_chat_detect(cases[i].jinja), cases[i].want, "case %zu: %s", i,
                     cli_chat_name(cli_chat_detect(cases[i].jinja)));
    cr_expect_eq(cli_chat_detect(NULL), CLI_CHAT_PLAIN);
    cli_chat k;
    cr_expect_eq(cli_chat_by_name("llama3", &k), 0);
    cr_expect_eq(k, CLI_CHAT_LLAMA3);
    cr_expect_eq(cli_chat_by_name("Llama3", &k), -1);

    /* beside a tokenizer.json: its tokenizer_config.json's chat_template */
    tu_write_text(tu_path("tokenizer_config.json"),
                  "{\"add_bos_token\": true, \"chat_template\": \"{% for m in messages %}"
                  "{{'<|im_start|>' + m['role']}}{% endfor %}\"}");
    char tj[512];
    snprintf(tj, sizeof tj, "%s", tu_path("tokenizer.json"));
    cr_expect_eq(cli_chat_from_tokenizer(tj, &k), 1);
    cr_expect_eq(k, CLI_CHAT_CHATML);
    tu_write_text(tu_path("tokenizer_config.json"), "{\"add_bos_token\": true}");
    cr_expect_eq(cli_chat_from_tokenizer(tj, &k), 0);
    cr_expect_eq(k, CLI_CHAT_PLAIN);
    cr_expect_eq(cli_chat_from_tokenizer("", &k), 0);
}
