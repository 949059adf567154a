/* chat_template.h: chat formats of the common model families (chat_template.c), for `linattn chat` and `linattn serve`. */
#ifndef LINATTN_CLI_CHAT_TEMPLATE_H
#define LINATTN_CLI_CHAT_TEMPLATE_H

#include <stddef.h>

typedef enum cli_chat {
    CLI_CHAT_PLAIN = 0, /* each message's text and a newline; the answer is a line */
    CLI_CHAT_CHATML,    /* <|im_start|>role\n...<|im_end|> (Qwen, SmolLM, OpenHermes, ...) */
    CLI_CHAT_LLAMA2,    /* [INST] <<SYS>>..<</SYS>> ... [/INST] answer</s> */
    CLI_CHAT_LLAMA3,    /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    CLI_CHAT_ZEPHYR,    /* <|role|>\n...</s> (Zephyr, TinyLlama chat) */
    CLI_CHAT_MISTRAL,   /* [INST] ... [/INST]answer</s> (the system text opens the turn) */
    CLI_CHAT_PHI3,      /* <|role|>\n...<|end|> */
    CLI_CHAT_GEMMA,     /* <start_of_turn>user|model\n...<end_of_turn> */
} cli_chat;

typedef struct cli_chat_msg {
    const char *role; /* system, user or assistant */
    const char *content;
} cli_chat_msg;

const char *cli_chat_name(cli_chat k);
/* The names, for messages. */
const char *cli_chat_names(void);
/* 0, or -1 for a name that is none of them. */
int cli_chat_by_name(const char *name, cli_chat *out);
/* The family a Jinja chat template's text belongs to, by the marks it
 * writes (as llama.cpp's built-in list recognises them); plain for none. */
cli_chat cli_chat_detect(const char *jinja);
/* The family of tokenizer_config.json's chat_template beside the
 * tokenizer.json at path (plain when there is none); 1 when a template was
 * found. */
int cli_chat_from_tokenizer(const char *tokenizer_json, cli_chat *out);
/* The text that ends an assistant's turn (a stop for generation). */
const char *cli_chat_end(cli_chat k);
/* The text of messages m[0..n) and then the assistant's opening (unless
 * the last message is the assistant's), into *out (malloc'd, *len bytes,
 * NUL-terminated). first: the conversation starts here; else it continues
 * a stream whose last answer just ended. 0, or -1 out of memory. */
int cli_chat_render(cli_chat k, const cli_chat_msg *m, int n, int first, char **out, size_t *len);

#endif
