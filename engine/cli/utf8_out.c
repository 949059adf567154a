/* utf8_out.c: whole UTF-8 characters out of bytes cut anywhere (the pieces of tokens). */
#include "cli.h"

/* The length of the character a lead byte starts; 0 for any other byte. */
static int lead_len(unsigned char b)
{
    return b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
}

size_t cli_utf8_take(cli_utf8 *u, const char *in, size_t n, char *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)in[i];
        if (u->n > 0) {
            if ((b & 0xC0) == 0x80) {
                u->held[u->n++] = b;
                if (u->n == u->need) {
                    for (int k = 0; k < u->n; k++)
                        out[m++] = (char)u->held[k];
                    u->n = 0;
                }
                continue;
            }
            /* cut short: what was held goes out as it is */
            for (int k = 0; k < u->n; k++)
                out[m++] = (char)u->held[k];
            u->n = 0;
        }
        if (lead_len(b)) {
            u->held[0] = b;
            u->n = 1;
            u->need = lead_len(b);
        } else
            out[m++] = (char)b;
    }
    return m;
}

size_t cli_utf8_flush(cli_utf8 *u, char *out)
{
    size_t m = (size_t)u->n;
    for (int k = 0; k < u->n; k++)
        out[k] = (char)u->held[k];
    u->n = 0;
    return m;
}
