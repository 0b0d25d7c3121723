"""Marks for texts to translate: `N_("...")` and `Np_("one ...", "{n} ...")`.

They change nothing at run time; they are what `pybabel extract` looks for (the keywords
`N_` and `Np_:1,2` in `scripts/catalogs`), so a text is translated where it is used.
"""

from __future__ import annotations

from typing import NamedTuple


def N_(message: str) -> str:
    """An English text to translate where it is shown."""
    return message


class Plural(NamedTuple):
    """A text with a count: the singular and plural English forms, `{n}` in either."""

    singular: str
    plural: str


def Np_(singular: str, plural: str) -> Plural:
    """A text to translate with a count (`Texts.plural`)."""
    return Plural(singular, plural)
