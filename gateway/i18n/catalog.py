"""The catalogs: read from the `.po` files beside this module the first time a language is used.

The `.po` files are the only form kept (no compiled `.mo`), so a fresh clone, a wheel and
CI all read the same files without a build step; reading one takes a few milliseconds.
"""

from __future__ import annotations

import functools
import gettext
import io
from dataclasses import dataclass
from pathlib import Path

from gateway.i18n.markers import Plural
from gateway.i18n.tags import SUPPORTED

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "messages"
SOURCE = "en"
"""The language the message ids are written in."""
LANGUAGES: dict[str, str] = {
    "en": "English",
    "ja": "日本語",
    "zh_TW": "繁體中文",
    "th": "ไทย",
}
"""Every language the gateway speaks, with its own name for itself (for /language)."""
assert tuple(LANGUAGES) == SUPPORTED


def po_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def _translations(language: str) -> gettext.NullTranslations:
    """The language's catalog (fuzzy entries left out); English is the ids themselves."""
    if language == SOURCE:
        return gettext.NullTranslations()
    # Babel is imported here so that a process that never translates does not pay for it.
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po
    from babel.support import Translations

    with po_path(language).open("rb") as po:
        catalog = read_po(po, locale=language, domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    return Translations(compiled, domain=DOMAIN)


@dataclass(frozen=True)
class Texts:
    """The fixed texts in one language; a text its catalog lacks stays English."""

    language: str
    _catalog: gettext.NullTranslations

    def __call__(self, message: str, /, **values: object) -> str:
        """`message` translated, its `{placeholders}` filled from `values`."""
        if not message:
            return message  # gettext("") is the catalog's header
        text = self._catalog.gettext(message)
        return text.format(**values) if values else text

    def plural(self, message: Plural, n: int, /, **values: object) -> str:
        """The form of `message` for the count `n` (its `{n}`), placeholders filled."""
        text = self._catalog.ngettext(message.singular, message.plural, n)
        return text.format(n=n, **values)

    @property
    def name(self) -> str:
        """The language's name in itself ("日本語")."""
        return LANGUAGES[self.language]


def texts_for(language: str | None) -> Texts:
    """The texts of one of LANGUAGES; English for None or any other value."""
    chosen = language if language in LANGUAGES else SOURCE
    assert chosen is not None
    return Texts(chosen, _translations(chosen))


ENGLISH = Texts(SOURCE, gettext.NullTranslations())
"""The source texts, for places no user's language reaches (terminal, logs)."""
