"""What every experiment's run directory must satisfy, shared by the experiment tests."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from PIL import Image


def estimates(data: Any, path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every ``{"mean", "low", "high", "n"}`` in a JSON tree, with where it is."""
    if isinstance(data, Mapping):
        if {"mean", "low", "high", "n"} <= set(data):
            yield path, data
            return
        for key, value in data.items():
            yield from estimates(value, f"{path}/{key}")
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from estimates(value, f"{path}/{index}")


def check_images(folder: Path, names: tuple[str, ...]) -> None:
    """Each name exists as a valid PNG and a valid SVG."""
    for name in names:
        with Image.open(folder / f"{name}.png") as image:
            image.verify()
            assert image.format == "PNG"
        root = ET.parse(folder / f"{name}.svg").getroot()
        assert root.tag.endswith("svg")
