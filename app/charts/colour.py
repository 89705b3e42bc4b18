"""Colour science for a palette every learner can read: CIEDE2000 colour difference, and how a colour looks
with a colour-vision deficiency (pure functions, numpy).

* sRGB → CIELAB (D65): IEC 61966-2-1 transfer function, then CIE 1976 L*a*b*.
* ΔE00: Sharma, Wu, Dalal, "The CIEDE2000 color-difference formula: implementation notes, supplementary test
  data, and mathematical observations", Color Res. Appl. 30 (2005), eq. 1–23; its Table 1 is the test data
  ``tests/app/charts/test_palette.py`` checks against.
* Dichromacy: Machado, Oliveira, Fernandes, "A physiologically-based model for simulation of color vision
  deficiency", IEEE TVCG 15 (2009), the severity-1.0 matrices, applied to linear RGB.

A ΔE00 of about 2 is just noticeable; 20 is "clearly a different colour", the bar ``app/charts/style.py`` keeps
every pair of action kinds apart under each simulated vision.
"""

from __future__ import annotations

import numpy as np

VISIONS = {
    "normal": np.eye(3),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}
"""Machado et al. 2009, severity 1.0: linear RGB in, linear RGB out."""

_RGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
)
_WHITE = np.array([0.95047, 1.0, 1.08883])  # D65


def hex_to_rgb(colour: str) -> np.ndarray:
    """ "#4C78A8" → sRGB in [0, 1]."""
    value = colour.lstrip("#")
    return np.array([int(value[i : i + 2], 16) for i in (0, 2, 4)]) / 255.0


def to_linear(srgb: np.ndarray) -> np.ndarray:
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def to_srgb(linear: np.ndarray) -> np.ndarray:
    linear = np.clip(linear, 0.0, 1.0)
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)


def simulate_vision(srgb: np.ndarray, vision: str) -> np.ndarray:
    """How ``srgb`` looks to someone with ``vision`` (a key of ``VISIONS``), as sRGB."""
    return to_srgb(to_linear(srgb) @ VISIONS[vision].T)


def to_lab(srgb: np.ndarray) -> np.ndarray:
    xyz = (to_linear(srgb) @ _RGB_TO_XYZ.T) / _WHITE
    epsilon, kappa = 216 / 24389, 24389 / 27
    f = np.where(xyz > epsilon, np.cbrt(xyz), (kappa * xyz + 16) / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def delta_e_2000(lab1: np.ndarray, lab2: np.ndarray) -> float:
    """CIEDE2000 difference between two L*a*b* colours (Sharma et al. 2005, with k_L = k_C = k_H = 1)."""
    l1, a1, b1 = (float(x) for x in lab1)
    l2, a2, b2 = (float(x) for x in lab2)
    c_mean = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_mean**7 / (c_mean**7 + 25.0**7)))  # eq. 4
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360 if c2p else 0.0
    dl, dc = l2 - l1, c2p - c1p
    if c1p * c2p == 0:  # eq. 10
        dh = 0.0
    elif abs(h2p - h1p) <= 180:
        dh = h2p - h1p
    else:
        dh = h2p - h1p - 360 if h2p > h1p else h2p - h1p + 360
    dhp = 2 * np.sqrt(c1p * c2p) * np.sin(np.radians(dh / 2))
    l_mean, cp_mean = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:  # eq. 14
        h_mean = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_mean = (h1p + h2p) / 2
    else:
        h_mean = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (
        1
        - 0.17 * np.cos(np.radians(h_mean - 30))
        + 0.24 * np.cos(np.radians(2 * h_mean))
        + 0.32 * np.cos(np.radians(3 * h_mean + 6))
        - 0.20 * np.cos(np.radians(4 * h_mean - 63))
    )
    d_theta = 30 * np.exp(-(((h_mean - 275) / 25) ** 2))
    r_c = 2 * np.sqrt(cp_mean**7 / (cp_mean**7 + 25.0**7))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / np.sqrt(20 + (l_mean - 50) ** 2)
    s_c = 1 + 0.045 * cp_mean
    s_h = 1 + 0.015 * cp_mean * t
    r_t = -np.sin(np.radians(2 * d_theta)) * r_c
    return float(np.sqrt((dl / s_l) ** 2 + (dc / s_c) ** 2 + (dhp / s_h) ** 2 + r_t * (dc / s_c) * (dhp / s_h)))


def seen_difference(colour1: str, colour2: str, vision: str) -> float:
    """ΔE00 between two hex colours as someone with ``vision`` sees them."""
    seen = [to_lab(simulate_vision(hex_to_rgb(c), vision)) for c in (colour1, colour2)]
    return delta_e_2000(seen[0], seen[1])
