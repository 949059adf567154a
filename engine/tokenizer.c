/* tokenizer.c: the byte-level tokenizer: token i is byte i. */
#include "linattn.h"

int linattn_tokenize(const char *text, size_t len, int *tokens)
{
    for (size_t i = 0; i < len; i++)
        tokens[i] = (unsigned char)text[i];
    return (int)len;
}

int linattn_token_byte(int token)
{
    return token >= 0 && token < 256 ? token : -1;
}
