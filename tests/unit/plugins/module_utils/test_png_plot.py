# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sweep plot is a valid PNG whose lines are drawn where their values put them."""

from __future__ import annotations

import struct
import zlib

from ansible_collections.llmops.inference.plugins.module_utils._png_plot import COLOURS, line_plot


def decode(data):
    """(width, height, rows of RGB tuples) of an 8-bit RGB PNG without filters, as line_plot writes it."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, chunks = 8, {}
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset:offset + 4])
        kind, body = data[offset + 4:offset + 8], data[offset + 8:offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length:offset + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks[kind] = chunks.get(kind, b"") + body
        offset += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour) == (8, 2) and b"IEND" in chunks
    raw = zlib.decompress(chunks[b"IDAT"])
    stride = width * 3 + 1
    rows = [[tuple(raw[y * stride + 1 + x * 3:y * stride + 4 + x * 3]) for x in range(width)] for y in range(height)]
    return width, height, rows


def test_each_series_is_drawn_in_its_colour_and_the_rest_is_white():
    width, height, rows = decode(line_plot({"A": [(10.0, 100.0), (20.0, 50.0)], "B": [(15.0, 5.0)]}, "T", "X", "Y", 400, 300))
    assert (width, height) == (400, 300)
    seen = {pixel for row in rows for pixel in row}
    assert tuple(COLOURS[0]) in seen and tuple(COLOURS[1]) in seen and (255, 255, 255) in seen
    # series A's higher point (y 100, the top of the range) is drawn above its lower one
    tops = [y for y, row in enumerate(rows) if tuple(COLOURS[0]) in row[:400 - 220]]
    assert min(tops) < 0.3 * height and max(tops) > min(tops) + 50


def test_missing_figures_are_left_out_not_drawn_at_zero():
    _width, _height, rows = decode(line_plot({"A": [(None, 1.0), (1.0, None)]}, "T", "X", "Y", 300, 200))
    assert tuple(COLOURS[0]) not in {pixel for row in rows for pixel in row[:300 - 220]}
