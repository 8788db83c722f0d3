# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sweep plot is an SVG document whose lines are drawn where their values put them."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ansible_collections.llmops.inference.plugins.module_utils.services._svg_plot import COLOURS, line_plot

SVG = "{http://www.w3.org/2000/svg}"


def series_of(document):
    """{series name: (colour, [(cx, cy) of its points], polyline points or None)} of a plot."""
    found = {}
    for group in document.iter(SVG + "g"):
        if "data-series" in group.attrib:
            line = group.find(SVG + "polyline")
            found[group.get("data-series")] = (group.get("stroke"), [(float(c.get("cx")), float(c.get("cy"))) for c in group.iter(SVG + "circle")],
                                               line.get("points") if line is not None else None)
    return found


def test_each_series_is_drawn_in_its_colour_where_its_values_put_it():
    document = ET.fromstring(line_plot({"A": [(20.0, 50.0), (10.0, 100.0)], "B": [(15.0, 5.0)]}, "T", "X", "Y", 400, 300))
    assert (document.get("width"), document.get("height")) == ("400", "300")
    found = series_of(document)
    assert found["A"][0] == COLOURS[0] and found["B"][0] == COLOURS[1]
    (x_low, y_high), (x_high, y_low) = found["A"][1]  # drawn in order of x
    assert x_low < x_high and y_high < y_low  # y 100 (the top of the range) above y 50
    assert y_high < 0.3 * 300 and found["A"][2].count(",") == 2 and found["B"][2] is None  # one point: no line
    texts = [t.text for t in document.iter(SVG + "text")]
    assert texts[0] == "T" and "X" in texts and "Y" in texts and "A" in texts and "B" in texts


def test_missing_figures_are_left_out_not_drawn_at_zero():
    found = series_of(ET.fromstring(line_plot({"A": [(None, 1.0), (1.0, None), (2.0, 3.0)]}, "T", "X", "Y")))
    assert len(found["A"][1]) == 1
