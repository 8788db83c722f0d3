# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How much a key resists guessing: keys of the front door and the engines below MIN_BITS are refused.

A key's strength is estimated from its length and the alphabet it draws from, as a generator would have drawn it:
hexadecimal 4 bits a character, digits 3.3, letters and digits 5.95, any printable ASCII 6.55. ``openssl rand -hex
16`` (32 characters) is 128 bits; a 15-character word with digits and dashes is about 92. A key that repeats itself
or is one character over and over is as weak as its shortest part, whatever its length.
"""

from __future__ import annotations

import math
import string

MIN_BITS = 128
FIX = "openssl rand -hex 24 makes one of 192 bits"
_CLASSES = ((string.digits, 10), (string.ascii_lowercase, 26), (string.ascii_uppercase, 26))


def _alphabet(key: str) -> int:
    if all(c in string.hexdigits for c in key) and (key == key.lower() or key == key.upper()):
        return 16 if any(c not in string.digits for c in key) else 10
    size = sum(count for chars, count in _CLASSES if any(c in chars for c in key))
    if any(c not in string.ascii_letters + string.digits for c in key):
        size += 33  # punctuation and the space of printable ASCII, or anything beyond it
    return size


def _period(key: str) -> int:
    """The length of the shortest part that the key repeats (the key's length when it repeats none)."""
    for size in range(1, len(key) // 2 + 1):
        if len(key) % size == 0 and key[:size] * (len(key) // size) == key:
            return size
    return len(key)


def estimated_bits(key: str) -> float:
    """Bits of guessing the key takes, estimated (0 for an empty key)."""
    if not key:
        return 0.0
    return _period(key) * math.log2(max(2, _alphabet(key)))


def weakness(key: str, variable: str, cluster: str) -> str | None:
    """The error for a key below MIN_BITS, naming the variable (never the key), else None."""
    bits = estimated_bits(key)
    if bits >= MIN_BITS:
        return None
    return ("cluster %s: %s is a key of about %d bits, below the %d that make guessing it hopeless. Fix: give a longer "
            "random key (%s)." % (cluster, variable, bits, MIN_BITS, FIX))
