"""The bot's fixed texts in the user's language: gettext catalogs read with Babel.

Every text the gateway writes to a chat is an English message id, marked where it is
defined with `N_` (or `Np_` for a text with a count), so `scripts/catalogs` finds it.
`texts_for(language)` gives the `Texts` that translate those ids for one of `LANGUAGES`,
falling back to the English id where a catalog lacks one. Which language a user gets is
decided once, in `gateway.conversation.language`.
"""

from __future__ import annotations

from gateway.i18n.catalog import ENGLISH, LANGUAGES, SOURCE, Texts, texts_for
from gateway.i18n.markers import N_, Np_, Plural
from gateway.i18n.tags import language_of

__all__ = [
    "ENGLISH",
    "LANGUAGES",
    "N_",
    "SOURCE",
    "Np_",
    "Plural",
    "Texts",
    "language_of",
    "texts_for",
]
