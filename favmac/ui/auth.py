"""The acting user of this browser session (local mode: the one local user).

h-auth owns this module (sign-in with ``st.login``); until it lands this is local mode only.
"""
from __future__ import annotations

import favmac.access


def current_identity() -> favmac.access.Identity:
    """The identity this session acts as (local mode: :data:`favmac.access.LOCAL_USER`)."""
    return favmac.access.LOCAL_USER
