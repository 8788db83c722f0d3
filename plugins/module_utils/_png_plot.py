# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A line plot written as a PNG with the standard library only (zlib, struct): the controller needs no plotting
package for benchmark.yml's sweep plot. Axes with their ranges, one coloured line per series with its points
marked, and a legend, in a 3x5 pixel font scaled up (digits, upper-case letters and a few signs)."""

from __future__ import annotations

import itertools
import struct
import zlib

# 3x5 glyphs, five rows of three pixels each, "#" lit
_FONT = {
    "0": "###|# #|# #|# #|###", "1": " # |## | # | # |###", "2": "###|  #|###|#  |###", "3": "###|  #|###|  #|###",
    "4": "# #|# #|###|  #|  #", "5": "###|#  |###|  #|###", "6": "###|#  |###|# #|###", "7": "###|  #|  #|  #|  #",
    "8": "###|# #|###|# #|###", "9": "###|# #|###|  #|###", ".": "   |   |   |   | # ", "-": "   |   |###|   |   ",
    "/": "  #|  #| # |#  |#  ", " ": "   |   |   |   |   ", "%": "# #|  #| # |#  |# #", "(": " # |#  |#  |#  | # ",
    ")": " # |  #|  #|  #| # ", ":": "   | # |   | # |   ", "_": "   |   |   |   |###",
    "A": " # |# #|###|# #|# #", "B": "## |# #|## |# #|## ", "C": " ##|#  |#  |#  | ##", "D": "## |# #|# #|# #|## ",
    "E": "###|#  |## |#  |###", "F": "###|#  |## |#  |#  ", "G": " ##|#  |# #|# #| ##", "H": "# #|# #|###|# #|# #",
    "I": "###| # | # | # |###", "J": "  #|  #|  #|# #| # ", "K": "# #|# #|## |# #|# #", "L": "#  |#  |#  |#  |###",
    "M": "# #|###|###|# #|# #", "N": "## |# #|# #|# #|# #", "O": " # |# #|# #|# #| # ", "P": "## |# #|## |#  |#  ",
    "Q": " # |# #|# #| # |  #", "R": "## |# #|## |# #|# #", "S": " ##|#  | # |  #|## ", "T": "###| # | # | # | # ",
    "U": "# #|# #|# #|# #|###", "V": "# #|# #|# #|# #| # ", "W": "# #|# #|###|###|# #", "X": "# #|# #| # |# #|# #",
    "Y": "# #|# #| # | # | # ", "Z": "###|  #| # |#  |###",
}
COLOURS = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (255, 127, 14), (148, 103, 189), (140, 86, 75)]


def _glyph(char):
    return (_FONT.get(char.upper()) or _FONT[" "]).split("|")


class Canvas:
    def __init__(self, width, height):
        self.width, self.height = width, height
        self.pixels = bytearray(b"\xff" * (width * height * 3))

    def dot(self, x, y, colour, size=1):
        for dx in range(size):
            for dy in range(size):
                px, py = int(x) + dx, int(y) + dy
                if 0 <= px < self.width and 0 <= py < self.height:
                    self.pixels[(py * self.width + px) * 3:(py * self.width + px) * 3 + 3] = bytes(colour)

    def line(self, x0, y0, x1, y1, colour, size=1):
        steps = int(max(abs(x1 - x0), abs(y1 - y0), 1))
        for i in range(steps + 1):
            self.dot(x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps, colour, size)

    def text(self, x, y, text, colour=(0, 0, 0), scale=2):
        for index, char in enumerate(text):
            for row, bits in enumerate(_glyph(char)):
                for col, bit in enumerate(bits):
                    if bit == "#":
                        self.dot(x + (index * 4 + col) * scale, y + row * scale, colour, scale)

    def png(self):
        raw = b"".join(b"\x00" + bytes(self.pixels[y * self.width * 3:(y + 1) * self.width * 3]) for y in range(self.height))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def _label(value):
    return "%.0f" % value if abs(value) >= 100 else "%.3g" % value


def line_plot(series, title, x_label, y_label, width=900, height=560):
    """PNG bytes of ``series`` ({name: [(x, y)...]}, each drawn in order of x) on shared axes from 0."""
    canvas = Canvas(width, height)
    left, right, top, bottom = 90, width - 220, 40, height - 60
    points = [p for values in series.values() for p in values if p[0] is not None and p[1] is not None]
    x_max = max([p[0] for p in points] + [1e-9]) * 1.1
    y_max = max([p[1] for p in points] + [1e-9]) * 1.1
    canvas.text(left, 12, title)
    canvas.line(left, bottom, right, bottom, (0, 0, 0))
    canvas.line(left, top, left, bottom, (0, 0, 0))
    for tick in range(5):
        x = left + (right - left) * tick / 4
        y = bottom - (bottom - top) * tick / 4
        canvas.line(x, bottom, x, bottom + 5, (0, 0, 0))
        canvas.text(x - 10, bottom + 10, _label(x_max * tick / 4))
        canvas.line(left - 5, y, left, y, (0, 0, 0))
        canvas.text(10, y - 5, _label(y_max * tick / 4))
    canvas.text(left + (right - left) // 2 - 4 * len(x_label), height - 24, x_label)
    canvas.text(10, top - 20, y_label)
    for index, (name, values) in enumerate(sorted(series.items())):
        colour = COLOURS[index % len(COLOURS)]
        placed = [(left + (right - left) * x / x_max, bottom - (bottom - top) * y / y_max)
                  for x, y in sorted(v for v in values if v[0] is not None and v[1] is not None)]
        for (x0, y0), (x1, y1) in itertools.pairwise(placed):
            canvas.line(x0, y0, x1, y1, colour, 2)
        for x, y in placed:
            canvas.dot(x - 3, y - 3, colour, 7)
        canvas.line(right + 20, top + 10 + index * 22, right + 44, top + 10 + index * 22, colour, 3)
        canvas.text(right + 52, top + 5 + index * 22, name[:20])
    return canvas.png()
