# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One reading of sizes and one table layout for every report (_text)."""

from __future__ import annotations

import pytest

from ansible_collections.llmops.inference.plugins.module_utils._text import aligned, flag_name, size_bytes


@pytest.mark.parametrize("text, expected", [
    ("8GB", 8 << 30), ("8gb", 8 << 30), (" 2 GB ", 2 << 30), ("1.5GB", 3 << 29), ("512MB", 512 << 20),
    ("1TB", 1 << 40), ("4096", 4096), ("64B", 64), (0, 0),
])
def test_pool_config_sizes_read_as_vllm_ascend_and_memcache_read_them(text, expected):
    assert size_bytes(text) == expected


@pytest.mark.parametrize("text", ["8G", "8g", "500gib", "GB", "", None, "8 XB", "-1GB", "8GBs"])
def test_a_size_a_pool_config_would_refuse_does_not_read(text):
    assert size_bytes(text) is None


@pytest.mark.parametrize("text, expected", [("500g", 500 << 30), ("2GiB", 2 << 30), ("64m", 64 << 20), ("1024GB", 1 << 40), ("10", 10)])
def test_docker_sizes_read_as_docker_writes_them(text, expected):
    assert size_bytes(text, docker=True) == expected


def test_a_table_aligns_every_column_to_its_widest_cell_and_cuts_long_cells():
    lines = aligned(("HOST", "STATE"), [("n1", "running"), ("node-22", 3)])
    assert lines == ["HOST     STATE", "n1       running", "node-22  3"]
    cut = aligned(("A", "B"), [("x" * 12, "end")], limit=8)
    assert cut == ["A         B", "xxxxx...  end"]


def test_a_flag_name_is_spelt_as_vllms_parser_spells_it():
    assert {flag_name(k) for k in ("--served-model-name", "served_model_name", "served-model-name")} == {"served-model-name"}
