"""The settings of a replay apart from its data (:class:`ReplayOptions`), and a FavMac run's display name."""
from __future__ import annotations

from dataclasses import dataclass

from ..scores import default_score
from ..universe import DEFAULT_UNIVERSE

__all__ = ["ReplayOptions", "method_name"]


def method_name(universe: str, score: str = "cost") -> str:
    """Display name of a FavMac run: "FavMac (ratio)" (cost score), "FavMac (price)" (ratio
    universe, price score), "FavMac (value, price)" (another universe, price score).

    >>> method_name("prob"), method_name("ratio", "price"), method_name("value", "price")
    ('FavMac (prob)', 'FavMac (price)', 'FavMac (value, price)')
    """
    if score == "cost":
        return f"FavMac ({universe})"
    return f"FavMac ({score})" if universe == "ratio" else f"FavMac ({universe}, {score})"


@dataclass(frozen=True)
class ReplayOptions:
    """How a replay runs, apart from the data: the settings keywords of :func:`favmac.replay.replay`, grouped.

    ``replay(p, y, value, cost, targets, options=ReplayOptions(delta=0.1, window=500))`` is
    ``replay(p, y, value, cost, targets, delta=0.1, window=500)``. ``score=None`` is
    :func:`favmac.scores.default_score` of the universe and control.

    >>> ReplayOptions(burn_in=10, label_delay=3).control
    'expected'
    """

    delta: float | None = None
    universe: str = DEFAULT_UNIVERSE
    burn_in: int = 0
    window: int | None = None
    c_max: float | None = None
    score: str | None = None
    adaptive_rate: float | None = None
    label_delay: int | None = None

    @property
    def control(self) -> str:
        return "expected" if self.delta is None else "violation"

    def resolved_score(self, targets=None, cost_weights=None) -> str:
        """The score the run uses (``score``, or the default for the universe, control, ``targets`` and
        the cost's per-code ``cost_weights``: :func:`favmac.scores.default_score`)."""
        return default_score(self.universe, self.delta, targets, cost_weights) if self.score is None else self.score
