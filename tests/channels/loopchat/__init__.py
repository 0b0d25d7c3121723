"""Loopchat: a small chat platform of the tests' own, added the way a third-party package adds one.

Nothing under `gateway/` names it: it registers its spec under the `skillgate.platforms`
entry-point group (the `installed` fixture installs it like a distribution), and the
registry, the console, the API, the CLI and the contract suite pick it up from there.
"""
