"""How the demo model reads the notebook tools' answers and a fix turn's details.

It parses the text `read_notebook` returns (`[i] id=ID code, In [n]` then the source,
then `  -> ` output summaries), the section `%agent fix` attaches (its first line names the
cell, a ```python block holds its code), and the outcome `edit_cell` reports.
"""

from __future__ import annotations

import re

from agentik_jupyter.notebook.cells import PROPOSAL_LINE
from agentik_jupyter.testing.demo_reading import Step

_HEAD = re.compile(r"^\[(\d+)\] id=(\S+) (code|markdown|raw)(?:, In \[\d+\])?$")
_FIX_CELL = re.compile(r"^Fix the error in cell (\S+?)(?: \(In \[\d+\]\))?: (.*)$", re.M)
_FIX_ANY = re.compile(r"^Fix the (?:error in|failed|last failed) [^:]*: (.*)$", re.M)
_CODE = re.compile(r"```python\n(.*?)\n```", re.S)
_CLIPPED = re.compile(r"\n… \[\d+ more chars: read_notebook\(cell_id=")


def cells(text: str) -> list[tuple[str, str, str]]:
    """(id, type, source) of each cell block in a read_notebook answer, in order."""
    found: list[tuple[str, str, str]] = []
    current: tuple[str, str] | None = None
    lines: list[str] = []

    def close() -> None:
        if current is not None:
            source = "\n".join(lines).rstrip("\n")
            found.append((current[0], current[1], "" if source == "(empty)" else source))

    for line in text.splitlines():
        head = _HEAD.match(line)
        if head is not None:
            close()
            current, lines = (head.group(2), head.group(3)), []
        elif current is not None and not line.startswith("  -> "):
            lines.append(line)
    close()
    return found


_TITLE = re.compile(r"^Notebook (.+?): (\d+) cells?")
_RAN = re.compile(r"^\[\d+\] id=\S+ code, In \[\d+\]$", re.M)


def notebook_summary(text: str) -> str:
    """What a read_notebook answer says about the notebook, in words: its cells, what they hold,
    and its outline (the Markdown headings), instead of the first lines of the answer itself."""
    found = cells(text)
    title = _TITLE.match(text)
    name, total = (title.group(1), int(title.group(2))) if title else ("Your notebook", len(found))
    code = [src for _, kind, src in found if kind == "code"]
    markdown = [src for _, kind, src in found if kind == "markdown"]
    agent = sum(1 for src in code if _is_agent_cell(src))
    ran = len(_RAN.findall(text))
    parts = [
        f"`{name}` has {total} cells: {len(code)} code cells ({ran} of them run) and {len(markdown)} Markdown cells."
    ]
    if agent:
        parts.append(f"{agent} of the code cells {'asks' if agent == 1 else 'ask'} the agent (`%%agent`, `%agent`).")
    headings = [line.lstrip("#").strip() for src in markdown for line in src.splitlines() if line.startswith("#")]
    if headings:
        outline = "\n".join(f"- {h}" for h in headings[:12])
        more = f"\n- … and {len(headings) - 12} more headings" if len(headings) > 12 else ""
        parts.append(f"Its outline, from its headings:\n\n{outline}{more}")
    if len(found) < total:
        parts.append(f"(I read {len(found)} of its {total} cells; ask about a cell to read it in full.)")
    return " ".join(parts[:2]) + "".join(f"\n\n{p}" for p in parts[2:])


def cell_source(text: str, cell_id: str) -> str | None:
    """The full source of `cell_id` as read_notebook showed it; None if absent or clipped."""
    for found_id, _, source in cells(text):
        if found_id == cell_id:
            return None if _CLIPPED.search("\n" + source) else source.rstrip("\n")
    return None


def _is_agent_cell(source: str) -> bool:
    return source.lstrip().startswith(("%%agent", "%agent"))


def edit_target(overview: str, question: str, variables: list[str]) -> str | None:
    """The cell the question means: one named by id, else the one that assigns a variable the
    question names, else the last code cell that is not an agent cell."""
    code = [(cid, src) for cid, kind, src in cells(overview) if kind == "code" and not _is_agent_cell(src)]
    for cid, _ in code:
        if re.search(rf"(?<![\w-]){re.escape(cid)}(?![\w-])", question):
            return cid
    for name in variables:
        if re.search(rf"\b{re.escape(name)}\b", question):
            for cid, src in code:
                if re.search(rf"^\s*{re.escape(name)}\s*(?:\[[^\]]*\])?\s*=(?!=)", src, re.M):
                    return cid
    return code[-1][0] if code else None


_NAMED_TEXT = re.compile(r"`([^`\n]+)`|\"([^\"\n]+)\"|'([^'\n]+)'")
_MARKER = re.compile(r"\b(?=\w*[\d_])[A-Za-z_]\w{3,}\b")


def delete_target(overview: str, question: str) -> tuple[str | None, str]:
    """(the cell the question asks to delete, or None; why): a cell named by id, else the one cell
    that holds the text the question quotes or a name-like word of it (`soakd37x5`, `old_total`),
    else the last cell the agent inserted when the question says so. Never a guess: a text that
    several cells hold names none of them."""
    candidates = [(cid, src) for cid, _, src in cells(overview) if not _is_agent_cell(src)]
    for cid, _ in candidates:
        if re.search(rf"(?<![\w-]){re.escape(cid)}(?![\w-])", question):
            return cid, f"cell `{cid}`"
    named = [next(g for g in m.groups() if g) for m in _NAMED_TEXT.finditer(question)]
    for text in named + _MARKER.findall(question):
        holding = [cid for cid, src in candidates if text in src]
        if len(holding) == 1:
            return holding[0], f"the cell that holds `{text}`"
        if len(holding) > 1:
            return None, f"{len(holding)} cells hold `{text}`, so I cannot tell which one you mean; name it by its id"
    if re.search(r"\b(you|agent) (inserted|added|proposed|wrote)\b|\binserted\b", question, re.I):
        inserted = [cid for cid, src in candidates if src.startswith(PROPOSAL_LINE)]
        if inserted:
            return inserted[-1], "the last cell I inserted"
    return None, "no cell matches what you describe; name it by its id or quote a text it holds"


def deletion_sentence(step: Step) -> str:
    """What became of a delete_cell proposal, for the user."""
    text = step.result
    if "was deleted" in text:
        return "You accepted: the cell is deleted."
    if "rejected" in text:
        return "You rejected the deletion, so the cell stays as it was."
    if text.startswith("Not applied"):
        return (
            "This frontend cannot show the deletion on the cell, so it is in the tool card above: "
            "delete the cell by hand if you agree (in JupyterLab you would get Accept / Reject on the cell)."
        )
    return f"{text.splitlines()[0] if text else 'No answer'} (about the deletion)."


def fix_details(attached: str, question: str) -> tuple[str | None, str, str]:
    """(cell id if the frontend said it, the failed cell's code, the error line) of a fix turn."""
    named = _FIX_CELL.search(attached)
    cell_id = named.group(1) if named is not None else None
    error_line = _FIX_ANY.search(attached) or _FIX_ANY.search(question)
    error = error_line.group(1) if error_line is not None else ""
    code = _CODE.search(attached)
    return cell_id, (code.group(1) if code is not None else ""), error


def outcome_sentence(step: Step, *, fix: bool) -> str:
    """What became of an edit_cell / insert_cell proposal, for the user."""
    text, what = step.result, "the fix" if fix else "the change"
    if step.name == "insert_cell":
        return (
            f"I proposed {what} in a new cell below: run it when you have read it. The failed cell is "
            "unchanged (this frontend did not say which cell failed, so I could not edit it in place)."
        )
    if "ran without an error" in text:
        return f"You accepted {what} and the cell ran without an error. Here is what it showed:\n\n{text}"
    if "still fails" in text:
        return f"You accepted {what}, but the cell still fails:\n\n{text}\n\nTell me more and I will try again."
    if "accepted" in text:
        return f"You accepted {what}: the cell holds the new source. Run it when you are ready."
    if "rejected" in text:
        return f"You rejected {what}, so the cell is unchanged. Tell me what you would like instead."
    if text.startswith("Not applied"):
        return (
            f"This frontend cannot show {what} on the cell, so the diff is in the tool card above: "
            "apply it by hand if you agree (in JupyterLab you would get Accept / Reject on the cell)."
        )
    return f"{text.splitlines()[0] if text else 'No answer'} (about {what})."
