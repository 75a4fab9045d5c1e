"""The advice's quality/cost frontier exported as PNG: a real image, with a ring on the recommended pattern only."""

import io
import struct

from PIL import Image

from ui.evidence.chart_export import chart_png
from ui.screens.advise import RING, frontier

ROWS = [{"pattern": "basic", "quality": 0.6, "mean_seconds": 1.0, "mean_llm_calls": 1.0},
        {"pattern": "adaptive", "quality": 0.62, "mean_seconds": 5.0, "mean_llm_calls": 3.0},
        {"pattern": "corrective", "quality": 0.9, "mean_seconds": 8.0, "mean_llm_calls": 5.0},
        {"pattern": "self_rag", "quality": 0.95, "mean_seconds": 10.0, "mean_llm_calls": 9.0}]
RED = tuple(int(RING[i:i + 2], 16) for i in (1, 3, 5))


def ring_pixels(png: bytes) -> list[tuple[int, int]]:
    """Where the ring's red is drawn (antialiased edges give or take 40 per channel)."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    width, height = image.size
    pixels = image.load()
    return [(x, y) for y in range(height) for x in range(width)
            if all(abs(c - r) <= 40 for c, r in zip(pixels[x, y], RED))]


def test_the_frontier_renders_to_png_with_a_ring_on_the_recommended_point_and_nowhere_else():
    cheap = chart_png(frontier(ROWS, "basic"))
    dear = chart_png(frontier(ROWS, "self_rag"))
    plain = chart_png(frontier(ROWS, None))
    for png in (cheap, dear, plain):
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
        width, height = struct.unpack(">II", png[16:24])  # IHDR: the canvas, at scale 2, holds the 600x320 plot
        assert width > 1_200 and height > 640
    assert not ring_pixels(plain)  # no pattern's own point is drawn in the ring's red
    left, right = ring_pixels(cheap), ring_pixels(dear)
    assert len(left) > 200 and len(right) > 200
    left_x = sum(x for x, _ in left) / len(left)
    right_x = sum(x for x, _ in right) / len(right)
    left_y = sum(y for _, y in left) / len(left)
    right_y = sum(y for _, y in right) / len(right)
    assert right_x - left_x > 0.6 * width  # 1 s against 10 s per question: the ring moved with the recommendation
    assert left_y - right_y > 0.15 * height  # and up, from quality 0.6 to 0.95


def test_the_ring_layer_keeps_only_the_recommended_pattern():
    spec = frontier(ROWS, "corrective").to_dict()
    ring = next(layer for layer in spec["layer"] if layer["mark"].get("color") == RING)
    assert ring["transform"] == [{"filter": "datum.recommended"}]
    [data] = spec["datasets"].values()
    assert [row["pattern"] for row in data if row["recommended"]] == ["corrective"]


def test_a_chart_that_cannot_be_rendered_gives_none():
    class Broken:
        def save(self, *args, **kwargs):
            raise ValueError("no renderer")

    assert chart_png(Broken()) is None
