# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A line plot written as SVG with the standard library (xml.etree): the controller needs no plotting package for
benchmark.yml's sweep plot, and any browser shows it. Axes from 0 with their ticks, one coloured line per series
with its points marked, a legend and the labels as text."""

from __future__ import annotations

import typing as t
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping

Point: t.TypeAlias = "tuple[float | None, float | None]"  # a string: module_utils also import on a host's Python
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
TICKS = 4


def _label(value: float) -> str:
    return "%.0f" % value if abs(value) >= 100 else "%.3g" % value


def _known(values: Iterable[Point]) -> list[tuple[float, float]]:
    """The points with both figures, in order of x: a missing figure is left out, not drawn at zero."""
    return sorted((x, y) for x, y in values if x is not None and y is not None)


def _add(parent: ET.Element, tag: str, text: str | None = None, **attributes: object) -> ET.Element:
    element = ET.SubElement(parent, tag, {key.replace("_", "-"): str(value) for key, value in attributes.items()})
    element.text = text
    return element


def line_plot(series: Mapping[str, Iterable[Point]], title: str, x_label: str, y_label: str,
              width: int = 900, height: int = 560) -> bytes:
    """SVG bytes of ``series`` ({name: [(x, y)...]}, each drawn in order of x) on shared axes from 0."""
    known = {name: _known(values) for name, values in sorted(series.items())}
    left, right, top, bottom = 90, width - 220, 50, height - 60
    x_max = max([x for points in known.values() for x, _y in points] + [1e-9]) * 1.1
    y_max = max([y for points in known.values() for _x, y in points] + [1e-9]) * 1.1

    def place(x: float, y: float) -> tuple[float, float]:
        return left + (right - left) * x / x_max, bottom - (bottom - top) * y / y_max

    svg = ET.Element("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": str(width), "height": str(height),
                             "font-family": "sans-serif", "font-size": "13"})
    _add(svg, "rect", width=width, height=height, fill="white")
    _add(svg, "text", title, x=left, y=24, font_size=16)
    axes = _add(svg, "g", stroke="black")
    _add(axes, "line", x1=left, y1=bottom, x2=right, y2=bottom)
    _add(axes, "line", x1=left, y1=top, x2=left, y2=bottom)
    for tick in range(TICKS + 1):
        x, y = place(x_max * tick / TICKS, y_max * tick / TICKS)
        _add(axes, "line", x1=x, y1=bottom, x2=x, y2=bottom + 5)
        _add(axes, "line", x1=left - 5, y1=y, x2=left, y2=y)
        _add(svg, "text", _label(x_max * tick / TICKS), x=x, y=bottom + 20, text_anchor="middle")
        _add(svg, "text", _label(y_max * tick / TICKS), x=left - 8, y=y + 4, text_anchor="end")
    _add(svg, "text", x_label, x=(left + right) / 2, y=height - 16, text_anchor="middle")
    _add(svg, "text", y_label, x=10, y=top - 14)
    for index, (name, points) in enumerate(known.items()):
        colour = COLOURS[index % len(COLOURS)]
        line = _add(svg, "g", stroke=colour, fill=colour, data_series=name)
        placed = [place(x, y) for x, y in points]
        if len(placed) > 1:
            _add(line, "polyline", points=" ".join("%.1f,%.1f" % p for p in placed), fill="none", stroke_width=2)
        for x, y in placed:
            _add(line, "circle", cx="%.1f" % x, cy="%.1f" % y, r=3.5)
        _add(svg, "line", x1=right + 20, y1=top + 10 + index * 22, x2=right + 44, y2=top + 10 + index * 22, stroke=colour,
             stroke_width=3)
        _add(svg, "text", name[:24], x=right + 52, y=top + 14 + index * 22)
    document: bytes = ET.tostring(svg, encoding="utf-8", xml_declaration=True)
    return document
