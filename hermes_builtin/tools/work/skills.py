"""``skills_list``, ``skill_view``, ``skill_manage``: reusable instructions the model loads when it needs them.

A skill is a folder holding a ``SKILL.md`` whose front matter has ``name`` and ``description``, plus any
linked files (references, templates, scripts). Skills come from the bundled folder
(``hermes_builtin/skills``, read-only) and from ``<data dir>/skills`` (managed by the model); a user
skill overrides a bundled one of the same name. A skill may sit in a category folder
(``<root>/<category>/<name>/SKILL.md``); names are unique across categories. Listing shows only names and
descriptions; the body is loaded on demand (progressive disclosure). What ``skill_manage`` saves passes the
skills guard (``_skills_guard``) first.

User skills are private data (they hold what the user and the model wrote down). A call whose selection
cannot manage skills (``skill_manage`` not enabled, as in ``hermes-webhook``, the toolset for untrusted
input) reads the bundled skills only: a user skill is neither listed nor loadable there.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from hermes_core import CallContext, ToolError, ToolRegistry
from hermes_core.fileio import atomic_write

from ._state import file_lock

TOOLSET = "skills"
BUNDLED_DIR = Path(__file__).resolve().parents[2] / "skills"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
MAX_SKILL_MD = 50_000
MAX_FILE = 100_000
MAX_FILES = 50
MAX_DESCRIPTION = 1_024
MAX_LISTED = 500
MAX_PATH_PARTS = 4

LIST_SCHEMA: dict[str, Any] = {
    "name": "skills_list",
    "description": (
        "List the available skills (name and one-line description), by category. A skill holds instructions "
        "for a kind of task; when one fits what you are doing, load it with skill_view before starting."
    ),
    "parameters": {
        "type": "object",
        "properties": {"category": {"type": "string", "description": "Only this category."}},
        "additionalProperties": False,
    },
}

VIEW_SCHEMA: dict[str, Any] = {
    "name": "skill_view",
    "description": (
        "Load a skill: its full SKILL.md and the list of its linked files; pass file_path to read one of "
        "those files (a path relative to the skill folder, as listed)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 64},
            "file_path": {"type": "string", "maxLength": 200},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
}

MANAGE_SCHEMA: dict[str, Any] = {
    "name": "skill_manage",
    "description": (
        "Create, change or delete your own skills. name: a-z, 0-9, '-'. create: content is the whole SKILL.md: "
        "YAML front matter (name, description: when to use it), then instructions. edit: content replaces it. "
        "patch: old_string -> new_string in it or file_path. write_file/remove_file: file_path (e.g. "
        "references/api.md). Bundled skills are read-only: create the same name to override."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["create", "patch", "edit", "delete", "write_file", "remove_file"],
            },
            "name": {"type": "string", "maxLength": 64},
            "category": {"type": "string", "maxLength": 64},
            "content": {"type": "string", "maxLength": MAX_FILE},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "replace_all": {"type": "boolean"},
            "file_path": {"type": "string", "maxLength": 200},
        },
        "required": ["action", "name"],
        "additionalProperties": False,
    },
}


class Skill(NamedTuple):
    name: str
    description: str
    path: Path
    bundled: bool
    problem: str | None = None
    category: str | None = None


def _user_root(context: CallContext) -> Path:
    return context.data_dir / TOOLSET


def _check_name(name: str, what: str = "skill name") -> str:
    if not NAME_RE.match(name):
        raise ToolError(
            f"invalid {what} {name[:80]!r}: use 1-64 lowercase letters, digits and '-', starting with a letter or digit"
        )
    return name


def _read_meta(folder: Path, bundled: bool, category: str | None = None) -> Skill:
    from ._frontmatter import FrontMatterError, parse_front_matter

    try:
        text = (folder / "SKILL.md").read_text(encoding="utf-8")[: MAX_SKILL_MD + 1]
        fields, _ = parse_front_matter(text)
    except (OSError, UnicodeDecodeError, FrontMatterError) as exc:
        return Skill(folder.name, "", folder, bundled, f"unreadable SKILL.md: {exc}", category)
    return Skill(folder.name, fields.get("description", ""), folder, bundled, None, category)


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(c for c in folder.iterdir() if NAME_RE.match(c.name) and not c.is_symlink())
    except OSError:
        return []


def _scan(root: Path, bundled: bool) -> dict[str, Skill]:
    """Skills at ``root/<name>`` and in category folders ``root/<category>/<name>`` (the first of a name wins)."""
    found: dict[str, Skill] = {}
    for child in _children(root):
        if (child / "SKILL.md").is_file():
            found.setdefault(child.name, _read_meta(child, bundled))
        elif child.is_dir():
            for sub in _children(child):
                if (sub / "SKILL.md").is_file():
                    found.setdefault(sub.name, _read_meta(sub, bundled, child.name))
    return found


def _reads_user_skills(context: CallContext) -> bool:
    """Whether this call may see user skills: only where the selection may manage them too."""
    return context.enabled is None or "skill_manage" in context.enabled


def _all_skills(context: CallContext) -> dict[str, Skill]:
    skills = _scan(BUNDLED_DIR, True)
    if _reads_user_skills(context):
        skills.update(_scan(_user_root(context), False))
    return dict(sorted(skills.items()))


def _find(context: CallContext, name: str) -> Skill:
    _check_name(name)
    user = _scan(_user_root(context), False).get(name) if _reads_user_skills(context) else None
    skill = user or _scan(BUNDLED_DIR, True).get(name)
    if skill is None:
        raise ToolError(f"no skill named {name!r}; skills_list shows the available ones")
    return skill


def _line(skill: Skill) -> str:
    if skill.problem:
        return f"- {skill.name}: ({skill.problem})"
    desc = " ".join(skill.description.split())
    if len(desc) > 200:
        desc = desc[:200] + "…"
    return f"- {skill.name}{' [bundled]' if skill.bundled else ''}: {desc}"


def skills_list(category: str | None = None, *, context: CallContext) -> str:
    """Names and descriptions of every skill (user skills override bundled ones), grouped by category."""
    skills = list(_all_skills(context).values())
    if category is not None:
        skills = [s for s in skills if s.category == category]
        if not skills:
            known = sorted({s.category for s in _all_skills(context).values() if s.category})
            raise ToolError(f"no skills in category {category!r} (categories: {', '.join(known) or 'none'})")
    if not skills:
        return "No skills available yet. Create one with skill_manage."
    skills.sort(key=lambda s: (s.category or "", s.name))
    lines = [f"{len(skills)} skills (load one with skill_view):"]
    current: str | None = None
    for skill in skills[:MAX_LISTED]:
        if skill.category != current and skill.category is not None:
            lines.append(f"## {skill.category}")
        current = skill.category
        lines.append(_line(skill))
    if len(skills) > MAX_LISTED:
        lines.append(f"… and {len(skills) - MAX_LISTED} more not shown")
    return "\n".join(lines)


def _linked_files(folder: Path) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in sorted(filenames):
            rel = (Path(dirpath) / fn).relative_to(folder).as_posix()
            if rel != "SKILL.md" and not fn.startswith("."):
                out.append(rel)
            if len(out) > MAX_FILES * 2:
                return out
    return out


def _relpath(file_path: str) -> PurePosixPath:
    """A safe relative path inside a skill folder, or ToolError."""
    if not file_path or "\x00" in file_path or "\\" in file_path:
        raise ToolError("file_path must be a non-empty relative path using '/'")
    rel = PurePosixPath(file_path)
    if rel.is_absolute() or any(part in ("..", ".", "") for part in file_path.split("/")):
        raise ToolError(
            f"file_path {file_path!r} must stay inside the skill folder (no absolute paths or '..')"
        )
    if len(rel.parts) > MAX_PATH_PARTS:
        raise ToolError(f"file_path {file_path!r} is nested too deeply (at most {MAX_PATH_PARTS} parts)")
    return rel


def _inside(folder: Path, rel: PurePosixPath) -> Path:
    target = folder / rel
    base = folder.resolve()
    resolved = target.resolve()
    if resolved != base and base not in resolved.parents:
        raise ToolError(f"file_path {rel.as_posix()!r} leads outside the skill folder")
    return target


def skill_view(name: str, file_path: str | None = None, *, context: CallContext) -> str:
    """The whole SKILL.md with its linked files listed, or one linked file."""
    skill = _find(context, name)
    if file_path is None or file_path.strip() in ("", "SKILL.md"):
        try:
            text = (skill.path / "SKILL.md").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ToolError(f"cannot read skill {name!r}: {exc}") from None
        files = _linked_files(skill.path)
        tail = ""
        if files:
            tail = "\n\n---\nLinked files (read with skill_view file_path=...):\n" + "\n".join(
                f"- {f}" for f in files
            )
        return text.rstrip("\n") + tail
    target = _inside(skill.path, _relpath(file_path.strip()))
    if not target.is_file():
        listed = ", ".join(_linked_files(skill.path)[:20]) or "none"
        raise ToolError(f"skill {name!r} has no file {file_path!r} (files: {listed})")
    data = target.read_bytes()[: MAX_FILE * 4 + 1]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{file_path!r} is not a text file") from None
    if len(text) > MAX_FILE:
        text = text[:MAX_FILE] + f"\n…(cut at {MAX_FILE} chars)"
    return text


def _validate_skill_md(name: str, content: str) -> None:
    from ._frontmatter import FrontMatterError, parse_front_matter

    if len(content) > MAX_SKILL_MD:
        raise ToolError(f"SKILL.md is {len(content)} chars; the limit is {MAX_SKILL_MD}")
    if "\x00" in content:
        raise ToolError("SKILL.md must be text (it contains NUL characters)")
    try:
        fields, body = parse_front_matter(content)
    except FrontMatterError as exc:
        raise ToolError(f"bad SKILL.md front matter: {exc}") from None
    if fields.get("name") != name:
        raise ToolError(f"the front matter must say 'name: {name}' (it says {fields.get('name')!r})")
    desc = fields.get("description", "")
    if not desc:
        raise ToolError("the front matter needs a 'description' saying when to use the skill")
    if len(desc) > MAX_DESCRIPTION:
        raise ToolError(f"the description has {len(desc)} chars; keep it under {MAX_DESCRIPTION}")
    if not body.strip():
        raise ToolError("SKILL.md needs instructions after the front matter")


def _check_text(content: str | None, what: str) -> str:
    if content is None:
        raise ToolError(f"{what} needs 'content'")
    if "\x00" in content:
        raise ToolError("content must be text (it contains NUL characters)")
    return content


def _guard(context: CallContext, name: str, text: str, file_name: str = "SKILL.md") -> str:
    """Scan what is about to be saved: refuse (``ToolError``), or return a warning for the result ("" if clean)."""
    from ._skills_guard import GUARD_MODES, scan

    mode = context.plugin_config(TOOLSET).get("guard", "refuse")
    if mode not in GUARD_MODES:
        raise ToolError(f"[plugins.skills] guard must be one of {', '.join(GUARD_MODES)}, not {mode!r}")
    findings = scan(text, file_name) if mode != "off" else []
    if not findings:
        return ""
    found = "; ".join(str(f) for f in findings[:5]) + (
        f" (and {len(findings) - 5} more)" if len(findings) > 5 else ""
    )
    if mode == "warn":
        return f" Warning, the skills guard found: {found}."
    raise ToolError(
        f"refused to save {file_name} of skill {name!r}: a skill is loaded later as trusted instructions, and this "
        f"content looks like an attack on the model that loads it: {found}. Remove it (an operator can allow "
        'such content with [plugins.skills] guard = "warn").',
        retryable=False,
    )


def _user_folder(root: Path, name: str) -> Path | None:
    """The folder of the user skill ``name`` (top level or in a category), or None."""
    skill = _scan(root, False).get(name)
    return skill.path if skill is not None else None


def _create(
    context: CallContext, root: Path, name: str, text: str, category: str | None, bundled: bool
) -> str:
    import shutil
    import tempfile

    if category is not None:
        _check_name(category, "category")
        if (root / category / "SKILL.md").is_file() or category == name:
            raise ToolError(f"{category!r} is a skill, not a category; choose another category name")
    folder = root / category / name if category else root / name
    if folder.exists() and not category and any((c / "SKILL.md").is_file() for c in _children(folder)):
        raise ToolError(f"{name!r} is a category of skills; choose another skill name")
    _validate_skill_md(name, text)
    warning = _guard(context, name, text)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        atomic_write(staging / "SKILL.md", text)
        if folder.exists():  # a leftover folder without SKILL.md
            shutil.rmtree(folder)
        os.replace(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    where = f" in category {category!r}" if category else ""
    note = " (overrides the bundled skill of that name)" if bundled else ""
    return f"Created skill {name!r}{where}{note}.{warning}"


def skill_manage(
    action: str,
    name: str,
    content: str | None = None,
    old_string: str | None = None,
    new_string: str | None = None,
    file_path: str | None = None,
    category: str | None = None,
    replace_all: bool = False,
    *,
    context: CallContext,
) -> str:
    """Create, patch, edit or delete a user skill, or write or remove one of its linked files."""
    import shutil
    import tempfile

    _check_name(name)
    root = _user_root(context)
    with file_lock(root / ".lock"):
        folder = _user_folder(root, name)
        bundled = _scan(BUNDLED_DIR, True).get(name) is not None
        if action == "create":
            if folder is not None:
                raise ToolError(f"skill {name!r} already exists; use action patch or edit")
            return _create(context, root, name, _check_text(content, "create"), category, bundled)
        if folder is None:
            if bundled:
                raise ToolError(
                    f"{name!r} is a bundled skill and read-only; create a skill of the same name to override it"
                )
            raise ToolError(f"no user skill named {name!r}")
        if action == "patch":
            return _patch(context, folder, name, file_path, old_string, new_string, replace_all)
        if action == "edit":
            return _edit(context, folder, name, content, old_string, new_string)
        if action == "delete":
            trash = Path(tempfile.mkdtemp(prefix=f".trash-{name}.", dir=root))
            os.replace(folder, trash / name)
            shutil.rmtree(trash, ignore_errors=True)
            after = " The bundled skill of that name is visible again." if bundled else ""
            return f"Deleted skill {name!r}.{after}"
        if action in ("write_file", "remove_file"):
            if not file_path:
                raise ToolError(f"{action} needs 'file_path'")
            rel = _relpath(file_path.strip())
            if rel.as_posix() == "SKILL.md":
                raise ToolError("SKILL.md is changed with action patch or edit")
            target = _inside(folder, rel)
            if action == "remove_file":
                if not target.is_file():
                    raise ToolError(f"skill {name!r} has no file {rel.as_posix()!r}")
                target.unlink()
                return f"Removed {rel.as_posix()} from skill {name!r}."
            text = _check_text(content, "write_file")
            if len(text) > MAX_FILE:
                raise ToolError(f"a linked file holds at most {MAX_FILE} chars")
            if not target.exists() and len(_linked_files(folder)) >= MAX_FILES:
                raise ToolError(f"skill {name!r} already has {MAX_FILES} files")
            if target.is_dir():
                raise ToolError(f"{rel.as_posix()!r} is a folder")
            warning = _guard(context, name, text, rel.as_posix())
            atomic_write(target, text)
            return f"Wrote {rel.as_posix()} ({len(text)} chars) in skill {name!r}.{warning}"
        raise ToolError(
            f"unknown action {action!r}; use create, patch, edit, delete, write_file or remove_file"
        )


def _patch(
    context: CallContext,
    folder: Path,
    name: str,
    file_path: str | None,
    old: str | None,
    new: str | None,
    every: bool,
) -> str:
    """Replace ``old`` with ``new`` in SKILL.md or a linked file: exactly once, or everywhere with ``every``."""
    if not old or new is None:
        raise ToolError("patch needs old_string (non-empty) and new_string")
    rel = _relpath(file_path.strip()) if file_path and file_path.strip() != "SKILL.md" else None
    target = _inside(folder, rel) if rel is not None else folder / "SKILL.md"
    shown = rel.as_posix() if rel is not None else "SKILL.md"
    try:
        current = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ToolError(f"skill {name!r} has no file {shown!r}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolError(f"cannot read {shown} of skill {name!r}: {exc}") from None
    count = current.count(old)
    if count == 0 or (count > 1 and not every):
        hint = "" if count == 0 else " (add context, or set replace_all)"
        raise ToolError(f"old_string occurs {count} times in {shown}; it must occur exactly once{hint}")
    text = current.replace(old, new)
    if rel is None:
        _validate_skill_md(name, text)
    elif len(text) > MAX_FILE:
        raise ToolError(f"a linked file holds at most {MAX_FILE} chars")
    warning = _guard(context, name, text, shown)
    atomic_write(target, text)
    plural = "s" if count != 1 else ""
    return f"Patched {shown} of skill {name!r} ({count} replacement{plural}).{warning}"


def _edit(
    context: CallContext, folder: Path, name: str, content: str | None, old: str | None, new: str | None
) -> str:
    path = folder / "SKILL.md"
    if content is not None:
        if old is not None or new is not None:
            raise ToolError("give either content or old_string + new_string, not both")
        text = _check_text(content, "edit")
    else:
        if not old or new is None:
            raise ToolError("edit needs content (or use action patch with old_string and new_string)")
        current = path.read_text(encoding="utf-8")
        count = current.count(old)
        if count != 1:
            raise ToolError(
                f"old_string occurs {count} times in SKILL.md; it must occur exactly once (add context)"
            )
        text = current.replace(old, new, 1)
    _validate_skill_md(name, text)
    warning = _guard(context, name, text)
    atomic_write(path, text)
    return f"Updated skill {name!r} ({len(text)} chars).{warning}"


def register(registry: ToolRegistry) -> None:
    registry.register(
        name="skills_list",
        toolset=TOOLSET,
        schema=LIST_SCHEMA,
        handler=skills_list,
        emoji="📚",
        max_result_size_chars=50_000,
        parallel_safe=True,
    )
    registry.register(
        name="skill_view",
        toolset=TOOLSET,
        schema=VIEW_SCHEMA,
        handler=skill_view,
        emoji="📖",
        max_result_size_chars=MAX_FILE + 5_000,
        parallel_safe=True,
    )
    registry.register(
        name="skill_manage",
        toolset=TOOLSET,
        schema=MANAGE_SCHEMA,
        handler=skill_manage,
        emoji="🛠",
        max_result_size_chars=5_000,
    )
