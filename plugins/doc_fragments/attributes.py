# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The attributes every module of the collection documents, written once (community.docker's doc_fragments do the same).

A module extends llmops.inference.attributes and says in its own ``attributes`` only its support and, where it
has one, what it does in that mode (``details``); the variants below hold what several modules share.
"""

from __future__ import annotations


class ModuleDocFragment:

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
"""

    # A module with an action plugin of the same name, run on the controller.
    ACTION = r"""
options: {}
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
"""

    # A module that only looks at a host.
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: Reads only, in both modes.
  diff_mode:
    support: none
    details: Reads only.
"""

    # A module that waits for containers or engines and changes nothing itself.
    WAIT = r"""
options: {}
attributes:
  diff_mode:
    support: none
    details: Waiting changes nothing.
"""
