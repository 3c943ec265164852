"""Synthetic user item sets (user_id, item) for partition selection and distinct count.

* :func:`zipf_user_items`: text-like data. Users have heavy-tailed set sizes (log-normal) and
  draw words from a Zipf law over an unbounded vocabulary, so a few words are held by almost
  everyone while most of the vocabulary is held by a single user (Reddit has 58% singleton
  items, Common Crawl 61%; docs/design/selection.md#paper-parameters).
* :func:`heavy_light_user_items`: the explicit example of Chen et al. 2025, App. C.2 /
  Sec. 6.2 (docs/design/selection.md#heavy-light): each of n users holds one shared heavy item plus
  two distinct light items drawn uniformly from m.

Both are chunked by users; chunk c is generated from SeedSequence([seed, c]) only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from spark_dp.checks import check_int_at_least, check_positive
from spark_dp.errors import ParameterError

__all__ = [
    "CHUNK_USERS",
    "heavy_light_chunk",
    "heavy_light_user_items",
    "word_names",
    "zipf_chunk",
    "zipf_user_items",
]

CHUNK_USERS = 50_000
_MAX_RANK = 2**31 - 1  # Zipf ranks are unbounded; clipping at 2^31 changes nothing in practice
HEAVY_ITEM = "heavy"


def _check_zipf(n_users: int, mean_items: float, exponent: float, degree_sigma: float) -> None:
    check_int_at_least("n_users", n_users, 1)
    check_positive("mean_items", mean_items)
    if not exponent > 1.0:
        raise ParameterError(f"zipf exponent must be > 1, got {exponent!r}")
    if degree_sigma < 0:
        raise ParameterError(f"degree_sigma must be >= 0, got {degree_sigma!r}")


def zipf_chunk(
    seed: int,
    chunk: int,
    start: int,
    stop: int,
    *,
    mean_items: float,
    exponent: float,
    degree_sigma: float,
    max_items: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Users ``start..stop-1`` of :func:`zipf_user_items` as (user ids, word ranks).

    Set sizes: 1 + LogNormal with mean ``mean_items`` word draws (before de-duplication) and
    shape ``degree_sigma``, capped at ``max_items``. Words: Zipf-like ranks with tail exponent
    ``exponent``; the word of rank r is named ``w<r>`` (:func:`word_names`). Duplicate words of
    a user are dropped, so a set is a set and users hold fewer distinct words than draws.
    """
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(chunk)]))
    n = stop - start
    mu = math.log(max(mean_items - 1.0, 1e-9)) - degree_sigma**2 / 2.0
    sizes = 1 + np.floor(rng.lognormal(mu, degree_sigma, size=n)).astype(np.int64)
    sizes = np.minimum(sizes, max_items)
    users = np.repeat(np.arange(start, stop, dtype=np.int64), sizes)
    # Discrete Pareto ranks: P(rank ≥ k) = k^{−(a−1)}, so P(rank = k) ≈ (a−1)·k^{−a} (Zipf-like),
    # drawn by inversion in one vectorized step.
    u = rng.random(len(users))
    ranks = np.minimum(np.floor(u ** (-1.0 / (exponent - 1.0))), _MAX_RANK).astype(np.int64)
    keys = np.unique((users - start) * (_MAX_RANK + 1) + ranks)  # sorted by (user, rank)
    return start + keys // (_MAX_RANK + 1), keys % (_MAX_RANK + 1)


def zipf_user_items(
    n_users: int,
    *,
    mean_items: float = 30.0,
    exponent: float = 1.3,
    degree_sigma: float = 1.0,
    max_items: int = 100_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Text-like (user_id, item) pairs; see the module docstring.

    Returns:
        pandas DataFrame (user_id int64, item string), one row per distinct pair.
    """
    import pandas as pd

    _check_zipf(n_users, mean_items, exponent, degree_sigma)
    frames = []
    for chunk, start in enumerate(range(0, n_users, CHUNK_USERS)):
        u, r = zipf_chunk(
            seed,
            chunk,
            start,
            min(start + CHUNK_USERS, n_users),
            mean_items=mean_items,
            exponent=exponent,
            degree_sigma=degree_sigma,
            max_items=max_items,
        )
        frames.append(pd.DataFrame({"user_id": u, "item": word_names(r)}))
    return pd.concat(frames, ignore_index=True)


def word_names(ranks: np.ndarray) -> np.ndarray:
    """Item names ``w<rank>`` of Zipf ranks (object array of str)."""
    names = pc.binary_join_element_wise("w", pc.cast(pa.array(ranks), pa.string()), "")
    return names.to_numpy(zero_copy_only=False)


def heavy_light_chunk(
    seed: int, chunk: int, start: int, stop: int, *, n_light: int
) -> tuple[np.ndarray, np.ndarray]:
    """Users ``start..stop-1`` of :func:`heavy_light_user_items` as (user ids, item strings)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(chunk)]))
    n = stop - start
    a = rng.integers(0, n_light, size=n)
    b = rng.integers(0, n_light - 1, size=n)
    b = b + (b >= a)  # second light item distinct from the first
    users = np.repeat(np.arange(start, stop, dtype=np.int64), 3)
    items = np.empty(3 * n, dtype=object)
    items[0::3] = HEAVY_ITEM
    items[1::3] = np.char.add("l", a.astype(str))
    items[2::3] = np.char.add("l", b.astype(str))
    return users, items


def heavy_light_user_items(
    n_users: int = 15_000, *, n_light: int = 1_000, seed: int = 0
) -> pd.DataFrame:
    """The heavy/light example (Chen et al. 2025 App. C.2; docs/design/selection.md#heavy-light: n =
    15000, m = 1000).

    Returns:
        pandas DataFrame (user_id int64, item string) with 3 rows per user.
    """
    import pandas as pd

    check_int_at_least("n_users", n_users, 1)
    check_int_at_least("n_light", n_light, 2)
    frames = []
    for chunk, start in enumerate(range(0, n_users, CHUNK_USERS)):
        u, i = heavy_light_chunk(
            seed, chunk, start, min(start + CHUNK_USERS, n_users), n_light=n_light
        )
        frames.append(pd.DataFrame({"user_id": u, "item": i}))
    return pd.concat(frames, ignore_index=True)
