"""Which of the gateway's languages a platform's language tag means, if any."""

from __future__ import annotations

import functools

SUPPORTED = ("en", "ja", "zh_TW", "th")
"""The catalogs there are: English (the source), Japanese, Traditional Chinese, Thai."""


@functools.lru_cache(maxsize=512)  # a handful of tags recur on every update
def language_of(tag: str | None) -> str | None:
    """One of SUPPORTED for a BCP 47 or POSIX tag ("ja-JP", "zh-Hant", "zh_TW", "th"), else None.

    Every Chinese tag means the Traditional Chinese catalog, the only Chinese one (Telegram
    keys its command menus by "zh" alone, so the two would otherwise disagree).
    """
    if not tag or not tag.strip():
        return None
    from babel import Locale, UnknownLocaleError  # here: config validates with this module

    cleaned = tag.strip().replace("_", "-").split(".")[0].split("@")[0]
    try:
        locale = Locale.parse(cleaned, sep="-")
    except (UnknownLocaleError, ValueError, TypeError):
        return None
    if locale.language == "zh":
        return "zh_TW"
    return locale.language if locale.language in SUPPORTED else None
