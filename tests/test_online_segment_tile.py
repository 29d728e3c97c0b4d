"""The Online tile "<threshold> (<segment>)" shows that segment's own threshold with several groupings
(favmac.ui.playback.running_series / session_metrics)."""
import numpy as np

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.ui import playback


def test_the_segment_tile_shows_the_segments_threshold_not_the_binding_one():
    rng = np.random.RandomState(4)
    n = 600
    y = rng.rand(n, 5) < 0.3
    p = np.clip(0.6 * y + 0.4 * rng.rand(n, 5), 0, 1)
    plan = np.where(rng.rand(n) < 0.5, "PLAN-A", "PLAN-C-SNP").astype(object)
    band = np.where(rng.rand(n) < 0.2, "80-84", "65-69").astype(object)  # a small band: its threshold binds often
    result = replay(p, y, AdditiveValue(), AdditiveCost(), [1.0], burn_in=100, groups={"plan": plan, "band": band})
    series = playback.running_series(result)
    own = result.groupings[0].thresholds[0]
    binding = np.flatnonzero(own != result.thresholds[0])
    assert binding.size  # patients whose set used the band's threshold
    step = int(binding[-1])
    m = playback.session_metrics(series, step + 1)
    assert m["segment"] == str(plan[100 + step])
    assert m["segment_threshold"] == own[step] != m["threshold"] == result.thresholds[0, step]
    pooled = playback.running_series(replay(p, y, AdditiveValue(), AdditiveCost(), [1.0], burn_in=100))
    assert "segment_threshold" not in pooled
    assert np.isnan(playback.session_metrics(pooled, 0)["segment_threshold"])
