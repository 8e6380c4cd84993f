"""Outside text made safe for a terminal, by memest's own rule
(src/base/escape.c, memest_esc_text; include/memest/escape.h).

"Unsafe" characters are those that can drive a terminal, break a line or
reorder what is displayed: C0 controls (tab and newline included), DEL, C1
controls (U+0080-U+009F), the bidirectional controls (U+200E, U+200F,
U+202A-U+202E, U+2066-U+2069), the line and paragraph separators (U+2028,
U+2029), the noncharacters U+FFFE and U+FFFF, and every byte that is not
part of a well-formed UTF-8 sequence (in a Python string: a surrogate, as
surrogateescape decodes such a byte from argv or a file name). Each byte of
an unsafe character (in UTF-8) is shown as \\xNN; the rest is copied.
Escaping twice changes nothing (the escaped text holds no unsafe character).

Every message memest-export prints goes through esc_text (errors.say, and
ExportError's message), so that no text of the model's code, a file name or
the command line reaches the terminal raw. Needs no PyTorch."""

import re

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
                     "\ufffe\uffff\ud800-\udfff]")

# how many characters of one piece of outside text a message shows (memest:
# MEMEST_ESC_NAME, 512 bytes for a name escaped)
PIECE = 300


def _bytes_of(ch):
    cp = ord(ch)
    if 0xDC80 <= cp <= 0xDCFF:           # a byte surrogateescape could not decode
        return bytes([cp - 0xDC00])
    return ch.encode("utf-8", "surrogatepass")


def _esc(m):
    return "".join("\\x%02X" % b for b in _bytes_of(m.group()))


def esc_text(s):
    """s (a str, or bytes read as UTF-8) with every unsafe character escaped."""
    if isinstance(s, (bytes, bytearray)):
        s = bytes(s).decode("utf-8", "surrogateescape")
    elif not isinstance(s, str):
        s = str(s)
    return _UNSAFE.sub(_esc, s)


def cut(s, limit=PIECE):
    """esc_text of the first `limit` characters of s, "..." after them when s
    is longer (the cut falls between characters, never inside an escape)."""
    if len(s) <= limit:
        return esc_text(s)
    return esc_text(s[:limit]) + "..."
