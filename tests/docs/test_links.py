"""Links between the project's documents, and no citation of documents outside the repository.

* Every relative link in ``README.md`` and ``docs/*.md`` points to a file or folder that exists and, with a
  ``#anchor``, to a heading of that Markdown file (anchors as GitHub makes them from headings).
* Every ``docs/<name>.md#<section>`` reference in the code, tests and configuration resolves the same way.
* No file of the project cites a document that is not part of it.
"""

from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
_DOC_REFERENCE = re.compile(r"(?<![\w/.-])docs/([\w.-]+\.md)(?:#([\w-]+))?")

# Citations of documents that are not in the repository (written so that this file does not match itself).
_OUTSIDE = [
    re.compile(r"\bSTYLE" + r" [A-Z]\b"),
    re.compile(r"\bDESIGN" + r"\s*§"),
    re.compile(r"\bspec" + r"\s*§", re.I),
    re.compile(r"\bprior" + r"[- ]art\b", re.I),
    re.compile(r"\.\./" + r"shared\b"),
]


def _prose(text: str) -> str:
    """The text outside fenced code blocks and code spans, where links are links."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, markup and punctuation dropped, lower case, spaces as '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, title in _HEADING.findall(_FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def _links(path: Path) -> list[str]:
    return _LINK.findall(_prose(path.read_text(encoding="utf-8")))


def _broken(source: Path, target: str) -> str | None:
    """Why a relative link from ``source`` does not resolve, or None."""
    file_part, _, anchor = target.partition("#")
    resolved = source if not file_part else (source.parent / file_part).resolve()
    if not resolved.exists():
        return f"{target}: no such file"
    if anchor:
        if resolved.suffix != ".md":
            return f"{target}: an anchor into a file that is not Markdown"
        if anchor not in anchors(resolved):
            return f"{target}: no heading with anchor #{anchor} in {resolved.relative_to(REPO)}"
    return None


def test_the_documents_exist():
    names = {p.name for p in DOCUMENTS}
    assert "README.md" in names and len(DOCUMENTS) > 1


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(document):
    problems = []
    for target in _links(document):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        problem = _broken(document, target)
        if problem:
            problems.append(problem)
    assert problems == [], f"broken links in {document.relative_to(REPO)}"


def test_the_slugs_follow_githubs_rules():
    assert slug("Exactly once per micro-batch") == "exactly-once-per-micro-batch"
    assert slug("`group_events`") == "group_events"
    assert slug("`/ready`") == "ready"
    assert slug("Recordings and `groupscope replay`") == "recordings-and-groupscope-replay"
    assert slug("offset-replay") == "offset-replay"


def _project_files() -> list[Path]:
    """The files of the project: tracked by git and new ones not ignored (the whole tree outside git)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                             capture_output=True, check=True).stdout
        paths = [REPO / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in REPO.rglob("*") if ".git" not in p.parts and ".venv" not in p.parts]
    return sorted(p for p in paths if p.is_file() and "data" not in p.relative_to(REPO).parts[:2])


def _texts() -> list[tuple[Path, str]]:
    out = []
    for path in _project_files():
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary: segment files, archives
        try:
            out.append((path, data.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def test_references_to_docs_sections_resolve():
    problems = []
    for path, text in _texts():
        for name, anchor in set(_DOC_REFERENCE.findall(text)):
            target = REPO / "docs" / name
            if not target.exists():
                problems.append(f"{path.relative_to(REPO)}: docs/{name} does not exist")
            elif anchor and anchor not in anchors(target):
                problems.append(f"{path.relative_to(REPO)}: docs/{name}#{anchor} names no heading of it")
    assert problems == []


def test_no_file_cites_documents_outside_the_repository():
    me = Path(__file__).resolve()
    hits = []
    for path, text in _texts():
        if path.resolve() == me:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in _OUTSIDE):
                hits.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert hits == [], "citations of documents outside the repository"
