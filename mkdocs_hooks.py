"""mkdocs hook: links from a docs page to a repository file outside docs/ (``../benchmarks/RESULTS.md``).

mkdocs can only link to files inside ``docs_dir``. These links are still checked — the target must exist in
the repository, else the build fails (``mkdocs build --strict``) — and are rendered as the repository path
in code font, which is what a reader of the site needs to find the file in a checkout.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.exceptions import PluginError

OUTSIDE_LINK = re.compile(r"\[([^\]]+)\]\((\.\./[^)#\s]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 - the mkdocs hook signature
    docs_dir = Path(config["docs_dir"]).resolve()
    repo = docs_dir.parent
    page_dir = (docs_dir / page.file.src_path).parent

    def rewrite(match: re.Match) -> str:
        text, target, _anchor = match.groups()
        path = (page_dir / target).resolve()
        if repo not in path.parents or not path.exists():
            raise PluginError(f"{page.file.src_path}: link to {target!r} points to no file of the repository")
        return f"{text} (`{path.relative_to(repo).as_posix()}`)"

    return OUTSIDE_LINK.sub(rewrite, markdown)
