"""Moved to `dia_assets.platform.sql.safety` (issue 32, slice 3): this name is the same module, kept so existing
imports and monkeypatches keep working until they say the new one."""

import sys

from dia_assets.platform.sql import safety

sys.modules[__name__] = safety
