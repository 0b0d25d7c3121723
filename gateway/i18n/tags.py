"""Which of the gateway's languages a platform's language tag means, if any."""

from __future__ import annotations

SUPPORTED = ("en", "ja", "zh_TW", "th")
"""The catalogs there are: English (the source), Japanese, Traditional Chinese, Thai."""


def language_of(tag: str | None) -> str | None:
    """One of SUPPORTED for a BCP 47 or POSIX tag ("ja-JP", "zh-Hant", "zh_TW", "th"), else None.

    Chinese is Traditional Chinese only when the tag says so (script Hant, or a territory
    that writes it: Taiwan, Hong Kong, Macau); plain "zh" and Simplified have no catalog.
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
        return "zh_TW" if locale.script == "Hant" else None
    return locale.language if locale.language in SUPPORTED else None
