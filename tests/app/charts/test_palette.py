"""The charts' colours are readable by every learner: CIEDE2000 against Sharma et al. 2005's test data, the
colour-vision simulation against what it must do, and the palette the charts use against the ≥ 20 rule."""

import itertools

import numpy as np
import pytest

from app.charts.colour import VISIONS, delta_e_2000, hex_to_rgb, seen_difference, simulate_vision
from app.charts.style import CHUNK_LIGHTEN, KIND_COLOURS, KIND_PATTERNS, chunk_shade, contrast, text_colour

SHARMA_2005 = [  # Table 1 of Sharma, Wu, Dalal (2005): L1 a1 b1, L2 a2 b2, ΔE00
    ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
    ((50.0, 3.1571, -77.2803), (50.0, 0.0, -82.7485), 2.8615),
    ((50.0, 2.8361, -74.0200), (50.0, 0.0, -82.7485), 3.4412),
    ((50.0, -1.3802, -84.2814), (50.0, 0.0, -82.7485), 1.0000),
    ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
    ((50.0, 2.5, 0.0), (61.0, -5.0, 29.0), 22.8977),
    ((50.0, 2.5, 0.0), (56.0, -27.0, -3.0), 31.9030),
    ((50.0, 2.5, 0.0), (58.0, 24.0, 15.0), 19.4535),
]


@pytest.mark.parametrize("lab1, lab2, expected", SHARMA_2005)
def test_ciede2000_matches_the_published_test_data(lab1, lab2, expected):
    assert delta_e_2000(np.array(lab1), np.array(lab2)) == pytest.approx(expected, abs=1e-4)
    assert delta_e_2000(np.array(lab2), np.array(lab1)) == pytest.approx(expected, abs=1e-4)  # symmetric


def test_the_simulated_visions_keep_greys_and_confuse_what_they_should():
    for vision in VISIONS:
        for grey in (0.0, 0.5, 1.0):
            assert simulate_vision(np.full(3, grey), vision) == pytest.approx(np.full(3, grey), abs=2e-3)
    red, green = "#D62728", "#2CA02C"  # a red/green pair, far apart for normal vision
    assert seen_difference(red, green, "normal") > 40
    assert seen_difference(red, green, "deuteranopia") < seen_difference(red, green, "normal") / 2
    blue, green_ = "#1F77B4", "#2CA02C"  # blue against green: what tritanopia confuses more than normal vision
    assert seen_difference(blue, green_, "tritanopia") < seen_difference(blue, green_, "normal")


@pytest.mark.parametrize("num_chunks", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("vision", list(VISIONS))
def test_every_pair_of_kinds_is_at_least_20_apart_at_every_chunk_shade(vision, num_chunks):
    """Under protanopia F and W were ΔE ≈ 12 apart, B and I ≈ 20; DualPipeV's lighter shades washed
    together. Every pair of kinds at the same chunk shade is now ≥ 20 for every simulated vision."""
    for chunk in range(num_chunks):
        shades = {kind: chunk_shade(kind, chunk, num_chunks) for kind in KIND_COLOURS}
        for one, two in itertools.combinations(shades, 2):
            assert seen_difference(shades[one], shades[two], vision) >= 20, (one, two, chunk, num_chunks)


@pytest.mark.parametrize("vision", list(VISIONS))
def test_a_kinds_chunk_shades_are_told_apart(vision):
    for kind in KIND_COLOURS:
        assert CHUNK_LIGHTEN[kind] > 0
        assert seen_difference(chunk_shade(kind, 0, 2), chunk_shade(kind, 1, 2), vision) >= 12, kind


def test_labels_stay_readable_and_kinds_have_patterns_too():
    for kind in KIND_COLOURS:
        for chunk in range(4):
            fill = chunk_shade(kind, chunk, 4)
            assert contrast(fill, text_colour(fill)) >= 4.5, (kind, chunk)
    assert len(set(KIND_PATTERNS.values())) == len(KIND_PATTERNS)  # a second code that survives greyscale
    assert all(0.0 <= c <= 1.0 for colour in KIND_COLOURS.values() for c in hex_to_rgb(colour))
