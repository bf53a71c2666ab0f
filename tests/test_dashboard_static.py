"""The page shell names every module it loads: each is fetched at once (modulepreload),
not discovered one import at a time."""

from __future__ import annotations

import re

from controlroom.api.dashboard import STATIC


def test_every_module_of_the_page_is_preloaded_by_its_shell() -> None:
    shell = (STATIC / "index.html").read_text()
    named = set(re.findall(r'href="/static/([\w-]+\.js)"', shell))
    named |= set(re.findall(r'<script type="module" src="/static/([\w-]+\.js)"', shell))
    assert named == {path.name for path in STATIC.glob("*.js")}
