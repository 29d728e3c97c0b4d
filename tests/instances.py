"""Small random FavMac instances shared by the controller and replay tests (fixed seeds only)."""
import numpy as np


def random_instance(rng, integer_weights):
    K = rng.randint(1, 6)
    N = rng.randint(0, 14)
    # few distinct probabilities so that ties in orders and in Chat keys are common
    grid = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    probs = grid[rng.randint(0, len(grid), size=(N + 3, K))]
    labels = rng.rand(N + 3, K) < 0.4
    if integer_weights:
        w = rng.randint(0, 4, size=K).astype(float)
        v = rng.randint(0, 4, size=K).astype(float)
    else:
        w = rng.choice([0.1, 0.2, 0.3, 0.7, 1.3, 2.5], size=K)
        v = rng.choice([0.1, 0.4, 1.0, 2.2], size=K)
    return probs, labels, v, w


def targets_for(rng, w, integer_weights):
    cmax = float(sum(w))
    base = [0.0, cmax, cmax + 1, -0.5]
    if integer_weights:
        base += [float(rng.randint(0, max(int(cmax), 1) + 1)), rng.randint(0, 4) + 0.1, rng.randint(0, 4) + 0.5]
    else:
        base += [round(rng.rand() * cmax, 1), 0.3, 0.6]
    return base


UNIVERSES = ["ratio", "prob", "value", "full"]
#: (universe, score) pairs: the cost score everywhere, the price score on the greedy universes.
SCORED = [(u, "cost") for u in UNIVERSES] + [(u, "price") for u in UNIVERSES if u != "full"]
