"""Why the dot products are scaled by 1/sqrt(d_k) (§3.2.1 and footnote 4), measured with random vectors.

Footnote 4: if the components of q and k are independent with mean 0 and variance 1, then q·k has mean 0
and variance d_k. §3.2.1: large dot products push the softmax "into regions where it has extremely small
gradients". Everything here samples q, k from N(0, I) and measures both claims; nothing here knows the UI.

Every random draw comes from a ``torch.Generator`` seeded from ``(seed, d_k)``, so a result for one d_k
does not depend on which other d_k values are on the grid, and the same seed always gives the same numbers.

The gradient measure (``grad_q_norm``): one query q attends over n keys k_j with values v_j, and the loss
reads the attention output along a random unit direction u:

    loss = (Σ_j w_j v_j)·u = Σ_j w_j c_j,   w = softmax(factor · q·k_j),   c_j = v_j·u ~ N(0, 1).

We draw c_j directly (for v_j ~ N(0, I) and |u| = 1 it has exactly that law) and take |∂loss/∂q| by
autograd. Unlike a cross-entropy loss on the weights (whose log undoes the softmax's saturation), this
loss reaches q only through the softmax Jacobian diag(w) - w wᵀ, as attention's gradients do.

Spread: over random queries the unscaled gradients span many orders of magnitude and their *mean* is set by
the rare queries whose two largest logits happen to tie, so the curves report the **median** (a typical query).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

DEFAULT_DKS: tuple[int, ...] = tuple(2**i for i in range(11))  # 1, 2, 4, ..., 1024
METRICS: tuple[str, ...] = ("entropy", "max_weight", "jacobian_norm", "grad_q_norm")
_SALT_DOT, _SALT_SAT, _SALT_EXAMPLE = 1, 2, 3


def _generator(seed: int, d_k: int, salt: int, device: torch.device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed((int(seed) * 1_000_003 + int(d_k) * 101 + salt) % (2**63 - 1))
    return g


def _device(device: torch.device | str | None) -> torch.device:
    return torch.device(device) if device is not None else torch.device("cpu")


def _check_dk(d_k: int) -> int:
    if int(d_k) != d_k or d_k < 1:
        raise ValueError(f"d_k must be a positive integer, got {d_k!r}")
    return int(d_k)


# ----------------------------------------------------------------------------- footnote 4: Var(q·k) = d_k


def dot_product_samples(
    d_k: int, n_samples: int = 4000, seed: int = 0, device: torch.device | str | None = None
) -> np.ndarray:
    """Raw dot products q·k for ``n_samples`` independent pairs q, k ~ N(0, I_{d_k}); shape (n_samples,).

    Divide by sqrt(d_k) to get what the paper's attention actually feeds the softmax.
    """
    d_k, dev = _check_dk(d_k), _device(device)
    g = _generator(seed, d_k, _SALT_DOT, dev)
    q = torch.randn(n_samples, d_k, generator=g, device=dev)  # (N, d_k)
    k = torch.randn(n_samples, d_k, generator=g, device=dev)  # (N, d_k)
    return (q * k).sum(-1).double().cpu().numpy()  # (N,)


def dot_product_variance(
    dks: Sequence[int] = DEFAULT_DKS, n_samples: int = 4000, seed: int = 0, device: torch.device | str | None = None
) -> dict:
    """Measured mean and variance of q·k (and of q·k/sqrt(d_k)) for each d_k.

    Returns {"d_k", "mean", "var", "var_scaled"} as float64 arrays of shape (len(dks),), plus "n_samples"
    and "seed". Footnote 4 predicts mean ≈ 0, var ≈ d_k, var_scaled ≈ 1.
    """
    dks = [_check_dk(d) for d in dks]
    mean, var = [], []
    for d in dks:
        s = dot_product_samples(d, n_samples, seed, device)  # (N,)
        mean.append(s.mean())
        var.append(s.var(ddof=1))
    var_arr = np.asarray(var)
    d_arr = np.asarray(dks, dtype=np.float64)
    return {
        "d_k": d_arr,
        "mean": np.asarray(mean),
        "var": var_arr,
        "var_scaled": var_arr / d_arr,
        "n_samples": int(n_samples),
        "seed": int(seed),
    }


# ----------------------------------------------------------------------------- §3.2.1: softmax saturation


def _jacobian_norm(w: Tensor) -> Tensor:
    """Frobenius norm of the softmax Jacobian diag(w) - w wᵀ, per row of w (..., n) -> (...).

    1 - w_i is summed from the other weights instead of subtracted, so a nearly one-hot w keeps its tiny
    but nonzero Jacobian instead of rounding it to 0.
    """
    n = w.shape[-1]
    off = 1.0 - torch.eye(n, dtype=w.dtype, device=w.device)  # (n, n), 0 on the diagonal
    outer = w[..., :, None] * w[..., None, :]  # (..., n, n)
    one_minus = (w[..., None, :] * off).sum(-1)  # (..., n): Σ_{j≠i} w_j
    diag_sq = (w * one_minus).square().sum(-1)  # Σ_i (w_i (1 - w_i))²
    off_sq = (outer * off).square().sum((-2, -1))  # Σ_{i≠j} (w_i w_j)²
    return (diag_sq + off_sq).sqrt()


def _entropy(w: Tensor) -> Tensor:
    """Softmax entropy in nats, 0·log 0 = 0; (..., n) -> (...)."""
    return -torch.special.xlogy(w, w).sum(-1)


def _attend(q: Tensor, keys: Tensor, c: Tensor, factor: float) -> dict[str, Tensor]:
    """One query per row attends over n keys: q (T, d_k), keys (T, n, d_k), c (T, n) -> metrics, each (T,).

    q and keys may be float32 (cheap to draw); the logits are cast to float64 before the softmax, so
    weights as small as 1e-300 and Jacobians of a nearly one-hot softmax survive.
    """
    with torch.inference_mode(False), torch.enable_grad():
        q = q.detach().clone().requires_grad_(True)
        logits = torch.einsum("td,tnd->tn", q, keys).double() * factor  # (T, n)
        w = torch.softmax(logits, dim=-1)  # (T, n)
        loss = (w * c).sum()  # Σ over trials of Σ_j w_j c_j; each trial's q only sees its own term
        (grad_q,) = torch.autograd.grad(loss, q)  # (T, d_k)
    w = w.detach()
    return {
        "weights": w,
        "entropy": _entropy(w),
        "max_weight": w.max(-1).values,
        "jacobian_norm": _jacobian_norm(w),
        "grad_q_norm": grad_q.double().norm(dim=-1),
    }


@torch.inference_mode(False)  # draws made inside a caller's inference_mode could not enter autograd
def _sample_attention(d_k: int, n_keys: int, n_trials: int, seed: int, salt: int, dev: torch.device):
    g = _generator(seed, d_k, salt, dev)
    q = torch.randn(n_trials, d_k, generator=g, device=dev)  # (T, d_k) float32
    keys = torch.randn(n_trials, n_keys, d_k, generator=g, device=dev)  # (T, n, d_k) float32
    c = torch.randn(n_trials, n_keys, generator=g, device=dev).double()  # (T, n): c_j = v_j·u
    return q, keys, c


def saturation_example(
    d_k: int, factor: float = 1.0, n_keys: int = 16, seed: int = 0, device: torch.device | str | None = None
) -> dict:
    """One random query and ``n_keys`` keys; softmax weights with the paper's 1/sqrt(d_k) and with ``factor``.

    ``factor`` is what the dot products are multiplied by: 1/sqrt(d_k) is the paper's, 1 is unscaled.
    The same q, keys and values are used for every factor, so only the scale differs.
    Returns {"d_k", "n_keys", "seed", "logits" (raw q·k_j, (n,)), "paper": {...}, "chosen": {...}} where
    each setting is {"factor", "weights" (n,), "entropy", "max_weight", "jacobian_norm", "grad_q_norm"}.
    """
    d_k, dev = _check_dk(d_k), _device(device)
    if not factor > 0:
        raise ValueError(f"factor must be positive, got {factor!r}")
    q, keys, c = _sample_attention(d_k, n_keys, 1, seed, _SALT_EXAMPLE, dev)
    out = {
        "d_k": d_k,
        "n_keys": int(n_keys),
        "seed": int(seed),
        "logits": torch.einsum("td,tnd->tn", q, keys)[0].double().cpu().numpy(),  # (n,)
    }
    for name, f in (("paper", 1.0 / math.sqrt(d_k)), ("chosen", float(factor))):
        m = _attend(q, keys, c, f)
        out[name] = {"factor": f, "weights": m.pop("weights")[0].cpu().numpy()}
        out[name].update({k: float(v[0]) for k, v in m.items()})
    return out


def saturation_curves(
    dks: Sequence[int] = DEFAULT_DKS,
    n_keys: int = 16,
    n_trials: int = 512,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> dict:
    """Entropy, largest weight, |Jacobian|_F and |∂loss/∂q| against d_k, scaled (×1/sqrt(d_k)) and unscaled.

    For each d_k, ``n_trials`` random queries each attend over ``n_keys`` random keys; scaled and unscaled
    use the same draws. Returns {"d_k" (G,), "n_keys", "n_trials", "seed", "scaled": {metric: (G,)},
    "unscaled": {...}}, medians over trials. Metrics: "entropy" (nats, at most log n_keys), "max_weight",
    "jacobian_norm", "grad_q_norm".
    """
    dks = [_check_dk(d) for d in dks]
    dev = _device(device)
    med = {s: {m: [] for m in METRICS} for s in ("scaled", "unscaled")}
    for d in dks:
        q, keys, c = _sample_attention(d, n_keys, n_trials, seed, _SALT_SAT, dev)
        for setting, f in (("scaled", 1.0 / math.sqrt(d)), ("unscaled", 1.0)):
            m = _attend(q, keys, c, f)
            for name in METRICS:
                med[setting][name].append(m[name].median().item())
    return {
        "d_k": np.asarray(dks, dtype=np.float64),
        "n_keys": int(n_keys),
        "n_trials": int(n_trials),
        "seed": int(seed),
        **{setting: {m: np.asarray(v) for m, v in table.items()} for setting, table in med.items()},
    }


# ----------------------------------------------------------------------------- the live model's maps


def attention_entropy(weights, mask=None) -> np.ndarray:
    """Mean attention entropy (nats) per head of a model's maps: (L, H, Q, K) -> (L, H) float64.

    ``weights``: numpy array or torch tensor, e.g. ``torch.stack([w[0] for w in maps.encoder_self])`` for
    one sentence. ``mask``: optional bool, broadcastable to (L, H, Q, K), True where a key may be attended
    (the model's convention); False entries are dropped and each row renormalised over what is left.
    Rows with no weight left (a fully masked query, e.g. padding) are left out of the mean; a head with no
    rows left gets NaN. 0·log 0 counts as 0, so exact zeros (causal masking) never make NaN.
    The maximum for a row over K allowed keys is log K (uniform attention).
    """
    w = _to_numpy(weights).astype(np.float64)
    if w.ndim != 4:
        raise ValueError(f"weights must be (L, H, Q, K), got shape {w.shape}")
    if mask is not None:
        m = _to_numpy(mask).astype(bool)
        try:
            m = np.broadcast_to(m, w.shape)
        except ValueError as e:
            raise ValueError(f"mask of shape {m.shape} does not broadcast to weights {w.shape}") from e
        w = np.where(m, w, 0.0)
    if (w < 0).any():
        raise ValueError("attention weights must be non-negative")
    total = w.sum(-1, keepdims=True)  # (L, H, Q, 1)
    valid = total[..., 0] > 0  # (L, H, Q)
    p = w / np.where(total > 0, total, 1.0)  # (L, H, Q, K), rows sum to 1 (or are all 0)
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    row_entropy = -plogp.sum(-1)  # (L, H, Q)
    n_rows = valid.sum(-1)  # (L, H)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_rows > 0, (row_entropy * valid).sum(-1) / n_rows, np.nan)  # (L, H)


def _to_numpy(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().cpu().numpy() if x.dtype != torch.bfloat16 else x.detach().float().cpu().numpy()
    return np.asarray(x)
