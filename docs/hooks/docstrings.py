"""MkDocs hook: the docstrings' reStructuredText leftovers, tidied in the API reference's HTML.

The docstrings are written for ``help()`` and Sphinx-style readers: ``:func:`x``` and ``text::``
before an indented example. Markdown renders the role's name as text next to the code; this drops
it, and the literal-block marker's second colon.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const):(?=<code>)")
_LITERAL_MARKER = re.compile(r"::(?=</p>)")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    if not page.file.src_path.startswith("reference/"):
        return html
    return _LITERAL_MARKER.sub(":", _ROLE.sub("", html))
