"""A tiny pure-Python PNG line chart (zlib + struct): throughput vs batch size.

matplotlib is not a dependency; the benchmark needs one chart with a log y-axis, a few lines,
dashes, and upper-case labels, which a 5×7 bitmap font and Bresenham lines cover.
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

Color = tuple[int, int, int]

# Classic 5×7 font, column-major, bit 0 = top row.
_FONT = {
    " ": (0, 0, 0, 0, 0),
    "%": (0x23, 0x13, 0x08, 0x64, 0x62),
    "(": (0, 0x1C, 0x22, 0x41, 0),
    ")": (0, 0x41, 0x22, 0x1C, 0),
    ",": (0, 0x50, 0x30, 0, 0),
    "-": (8, 8, 8, 8, 8),
    ".": (0, 0x60, 0x60, 0, 0),
    "/": (0x20, 0x10, 8, 4, 2),
    ":": (0, 0x36, 0x36, 0, 0),
    "=": (0x14, 0x14, 0x14, 0x14, 0x14),
    "0": (0x3E, 0x51, 0x49, 0x45, 0x3E),
    "1": (0, 0x42, 0x7F, 0x40, 0),
    "2": (0x42, 0x61, 0x51, 0x49, 0x46),
    "3": (0x21, 0x41, 0x45, 0x4B, 0x31),
    "4": (0x18, 0x14, 0x12, 0x7F, 0x10),
    "5": (0x27, 0x45, 0x45, 0x45, 0x39),
    "6": (0x3C, 0x4A, 0x49, 0x49, 0x30),
    "7": (1, 0x71, 9, 5, 3),
    "8": (0x36, 0x49, 0x49, 0x49, 0x36),
    "9": (6, 0x49, 0x49, 0x29, 0x1E),
    "A": (0x7E, 0x11, 0x11, 0x11, 0x7E),
    "B": (0x7F, 0x49, 0x49, 0x49, 0x36),
    "C": (0x3E, 0x41, 0x41, 0x41, 0x22),
    "D": (0x7F, 0x41, 0x41, 0x22, 0x1C),
    "E": (0x7F, 0x49, 0x49, 0x49, 0x41),
    "F": (0x7F, 9, 9, 1, 1),
    "G": (0x3E, 0x41, 0x41, 0x51, 0x32),
    "H": (0x7F, 8, 8, 8, 0x7F),
    "I": (0, 0x41, 0x7F, 0x41, 0),
    "J": (0x20, 0x40, 0x41, 0x3F, 1),
    "K": (0x7F, 8, 0x14, 0x22, 0x41),
    "L": (0x7F, 0x40, 0x40, 0x40, 0x40),
    "M": (0x7F, 2, 4, 2, 0x7F),
    "N": (0x7F, 4, 8, 0x10, 0x7F),
    "O": (0x3E, 0x41, 0x41, 0x41, 0x3E),
    "P": (0x7F, 9, 9, 9, 6),
    "Q": (0x3E, 0x41, 0x51, 0x21, 0x5E),
    "R": (0x7F, 9, 0x19, 0x29, 0x46),
    "S": (0x46, 0x49, 0x49, 0x49, 0x31),
    "T": (1, 1, 0x7F, 1, 1),
    "U": (0x3F, 0x40, 0x40, 0x40, 0x3F),
    "V": (0x1F, 0x20, 0x40, 0x20, 0x1F),
    "W": (0x7F, 0x20, 0x18, 0x20, 0x7F),
    "X": (0x63, 0x14, 8, 0x14, 0x63),
    "Y": (3, 4, 0x78, 4, 3),
    "Z": (0x61, 0x51, 0x49, 0x45, 0x43),
}
BLACK: Color = (0, 0, 0)
GREY: Color = (215, 215, 215)
PALETTE: tuple[Color, ...] = ((31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189))


class Canvas:
    def __init__(self, width: int, height: int, background: Color = (255, 255, 255)) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def dot(self, x: int, y: int, color: Color, size: int = 1) -> None:
        half = size // 2
        for yy in range(y - half, y - half + size):
            for xx in range(x - half, x - half + size):
                if 0 <= xx < self.width and 0 <= yy < self.height:
                    i = 3 * (yy * self.width + xx)
                    self.pixels[i : i + 3] = bytes(color)

    def line(
        self, x0: int, y0: int, x1: int, y1: int, color: Color, width: int = 1, dash: int = 0
    ) -> None:
        """Bresenham; ``dash`` > 0 draws ``dash`` pixels on, ``dash`` off."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err, step = dx + dy, 0
        while True:
            if not dash or (step // dash) % 2 == 0:
                self.dot(x0, y0, color, width)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy
            step += 1

    def text(self, x: int, y: int, s: str, color: Color = BLACK, scale: int = 1) -> None:
        for ch in s.upper():
            for col, bits in enumerate(_FONT.get(ch, _FONT[" "])):
                for row in range(7):
                    if bits >> row & 1:
                        for k in range(scale * scale):
                            self.dot(
                                x + col * scale + k % scale, y + row * scale + k // scale, color
                            )
            x += 6 * scale

    def png(self) -> bytes:
        def chunk(kind: bytes, data: bytes) -> bytes:
            return (
                struct.pack(">I", len(data))
                + kind
                + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
            )

        stride = 3 * self.width
        raw = b"".join(
            b"\x00" + bytes(self.pixels[y * stride : (y + 1) * stride]) for y in range(self.height)
        )
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b"")
        )


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[tuple[int, float]]  # (batch size, jobs/s)
    color: Color
    dashed: bool = False


def _short(v: float) -> str:
    return f"{v / 1000:g}K" if v >= 1000 else f"{v:g}"


def chart(series: Sequence[Series], title: str, width: int = 900, height: int = 520) -> bytes:
    """Log-y line chart over categorical batch sizes."""
    c = Canvas(width, height)
    left, right, top, bottom = 70, width - 210, 40, height - 50
    xs = sorted({b for s in series for b, _ in s.points})
    values = [v for s in series for _, v in s.points if v > 0] or [1.0]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    if hi <= lo:
        hi = lo * 10

    def px(b: int) -> int:
        i = xs.index(b)
        return int(left + (right - left) * (i + 0.5) / max(1, len(xs)))

    def py(v: float) -> int:
        frac = (math.log10(max(v, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return int(bottom - frac * (bottom - top))

    decade = lo
    while decade <= hi:
        for m in (1, 2, 5):
            v = decade * m
            if v <= hi:
                c.line(left, py(v), right, py(v), GREY)
                c.text(left - 8 - 6 * len(_short(v)), py(v) - 3, _short(v))
        decade *= 10
    c.line(left, top, left, bottom, BLACK)
    c.line(left, bottom, right, bottom, BLACK)
    for b in xs:
        c.line(px(b), bottom, px(b), bottom + 4, BLACK)
        c.text(px(b) - 3 * len(f"B={b}"), bottom + 10, f"B={b}")
    c.text(left, 12, title, scale=2)
    c.text((left + right) // 2 - 90, height - 18, "BATCH SIZE (JOBS PER CLAIM)")
    for n, s in enumerate(series):
        pts = sorted(s.points)
        for (b0, v0), (b1, v1) in itertools.pairwise(pts):
            c.line(
                px(b0),
                py(v0),
                px(b1),
                py(v1),
                s.color,
                1 if s.dashed else 3,
                dash=6 if s.dashed else 0,
            )
        for b, v in pts:
            c.dot(px(b), py(v), s.color, 5 if s.dashed else 7)
        ly = top + 10 + 18 * n
        c.line(
            right + 15,
            ly + 3,
            right + 45,
            ly + 3,
            s.color,
            1 if s.dashed else 3,
            dash=4 if s.dashed else 0,
        )
        c.text(right + 52, ly, s.label)
    return c.png()
