/* escape.h: makes a message safe for a terminal: control bytes and broken UTF-8 become \xNN; not installed. */
#ifndef LINATTN_ENGINE_ESCAPE_H
#define LINATTN_ENGINE_ESCAPE_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (at most n bytes) that is no C1
 * control character, or 0. */
static inline size_t linattn_utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (len == 2 && c == 0xc2 && s[1] < 0xa0) /* U+0080..U+009F: C1 controls */
        return 0;
    if (len == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0)))
        return 0; /* overlong, or a UTF-16 surrogate */
    if (len == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90)))
        return 0; /* overlong, or past U+10FFFF */
    return len;
}

/* Copies the NUL-terminated src into dst[size] with every control byte
 * (below 0x20, and 0x7f), C1 control and byte of broken UTF-8 written as
 * \xNN, so text taken from a file cannot drive the terminal it is printed
 * on. Truncates to fit; dst is always terminated. */
static inline void linattn_escape(char *dst, size_t size, const char *src)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0, n = 0;
    while (s[n])
        n++;
    for (size_t i = 0; i < n && size > 0;) {
        size_t len = s[i] >= 0x80 ? linattn_utf8_len(s + i, n - i) : (s[i] >= 0x20 && s[i] != 0x7f);
        if (len) {
            if (o + len >= size)
                break;
            for (size_t k = 0; k < len; k++)
                dst[o++] = (char)s[i + k];
            i += len;
        } else {
            if (o + 4 >= size)
                break;
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[s[i] >> 4];
            dst[o++] = hex[s[i] & 15];
            i++;
        }
    }
    if (size > 0)
        dst[o < size ? o : size - 1] = '\0';
}

#endif
