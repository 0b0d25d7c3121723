"""Images for the model: refused past a pixel limit before decoding, resized, sent as JPEG."""

from __future__ import annotations

import base64
import io
import warnings
from dataclasses import dataclass

from gateway.errors import MediaBomb, MediaUnsupported

_QUALITIES = (85, 70, 55, 40)


@dataclass(frozen=True)
class PreparedImage:
    """An image as the model gets it: a data URL, and the sizes before and after."""

    data_url: str
    width: int
    height: int
    """The original's pixels."""
    sent_width: int
    sent_height: int
    sent_bytes: int


def prepare_image(data: bytes, *, max_pixels: int, side: int, max_bytes: int) -> PreparedImage:
    """The image, at most `side` pixels long and `max_bytes` as JPEG; blocking, run in a thread."""
    # Pillow loads with the first image, not at start-up.
    from PIL import Image, ImageOps, UnidentifiedImageError

    with warnings.catch_warnings():
        # Pillow warns (and past twice its limit raises) on huge images; ours is checked below.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as image:
                # `open` reads the header only: the size is known before any pixel is decoded.
                width, height = image.size
                if width * height > max_pixels:
                    raise MediaBomb(
                        f"{width}x{height} pixels, more than the {max_pixels:,} allowed",
                        unit="pixels",
                        limit=max_pixels,
                    )
                # Shrunk before anything else, so no full-size copy is made (a JPEG is even
                # decoded at a reduced scale); palette and bit images first become RGBA, which
                # resizes smoothly.
                source = (
                    image if image.mode in ("RGB", "RGBA", "L", "LA") else image.convert("RGBA")
                )
                source.thumbnail((side, side), Image.Resampling.LANCZOS)
                picture = ImageOps.exif_transpose(source).convert("RGBA")
        except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError) as exc:
            if isinstance(exc, Image.DecompressionBombError):
                raise MediaBomb(str(exc), unit="pixels", limit=max_pixels) from exc
            raise MediaUnsupported(f"not an image Pillow can read: {exc}") from exc
    # Transparency becomes white, as chat apps show it.
    flat = Image.new("RGB", picture.size, "white")
    flat.paste(picture, mask=picture.getchannel("A"))
    encoded = b""
    for quality in _QUALITIES:
        out = io.BytesIO()
        flat.save(out, "JPEG", quality=quality, optimize=True)
        encoded = out.getvalue()
        if len(encoded) <= max_bytes:
            break
        if quality == _QUALITIES[-1]:
            flat.thumbnail((flat.width // 2, flat.height // 2))
            out = io.BytesIO()
            flat.save(out, "JPEG", quality=quality)
            encoded = out.getvalue()
    url = "data:image/jpeg;base64," + base64.b64encode(encoded).decode("ascii")
    return PreparedImage(url, width, height, flat.width, flat.height, len(encoded))
