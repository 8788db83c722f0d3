# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine container's devices and mounts from an ascend_driver profile.

A profile lists what its seed's ``docker run`` line maps besides the NPUs; the NPUs themselves
(/dev/davinci0 .. N-1) come from the hardware table (_plan_model.HARDWARE), so the devices a container
is given and the devices the planner shares out are one number. A profile that lists NPUs of its own (an
override that maps fewer, or one copied from an older version) keeps exactly those.
"""

from __future__ import annotations

import re
import typing as t
from collections.abc import Iterable

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import HARDWARE

NPU = re.compile(r"/dev/davinci\d+")


def npu_devices(hardware: str | None) -> list[str]:
    """/dev/davinciN of every NPU of an Ascend hardware kind; none for the others (GPUs come by device request)."""
    kind = HARDWARE.get(hardware or "")
    return ["/dev/davinci%d" % n for n in range(kind["devices"])] if kind is not None and kind["ascend"] else []


def container(profile: dict[str, t.Any], overrides: dict[str, t.Any] | None = None, extra_devices: Iterable[str] | None = None,
              extra_volumes: Iterable[str] | None = None) -> dict[str, t.Any]:
    """The profile with its hardware's NPUs first, the overrides over it, then the extra devices and mounts."""
    listed = list(profile.get("devices") or [])
    own = any(NPU.fullmatch(str(device)) for device in listed)
    npus = [] if own else npu_devices(profile.get("hardware"))
    result = dict(profile)
    result.update(overrides or {})
    result["devices"] = npus + listed + list(extra_devices or [])
    result["volumes"] = list(profile.get("volumes") or []) + list(extra_volumes or [])
    return result
