"""Whose a setting's value is, and what a workspace's own values may do.

A value is the **user's** when it comes from the user's ``config.toml``, the environment, or an
editor that marks it as the user's own (VS Code's user settings: ``userValues`` in the payload).
Every other value may come from the workspace: ``.context-companion.toml``, a VS Code workspace
or folder setting, and everything a client sends without saying whose it is (a Neovim
``.neoconf.json`` or exrc reaches the server the same way as the user's init.lua).

A value that may come from the workspace

* names and writes files only inside the workspace folders (resolved the way the setting's
  reader resolves it, ``~`` and every symlink included), and in Restricted Mode not at all;
* cannot remove the secret-file protection (``context.exclude``, ``context.redactSecrets``)
  that the user's own layers put in force: it may only add to it.

A value that breaks this is dropped, with one line saying which key, which value and why
(:class:`Refusal`); it never stops the other settings.

Which keys read or write a file, open a port or guard secrets is marked on the fields of the
models (:func:`sensitive`), so a new key cannot be forgotten by this module or by the docs.
"""

from __future__ import annotations

import os
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from ..containment import is_within, real_roots, realpath
from .models import Settings

USER_VALUES = "userValues"  # editor payload: keys whose value is the user's own
WORKSPACE_TRUSTED = "workspaceTrusted"  # editor payload: false in Restricted Mode
EDITOR_META = (USER_VALUES, WORKSPACE_TRUSTED)


@dataclass(frozen=True)
class Sensitive:
    key: str  # dotted camelCase, ``[]`` for a list's items (``systemPrompt.contributors[].files``)
    touches: str
    workspace: str


def sensitive(model: type[BaseModel] | None = None, prefix: str = "") -> list[Sensitive]:
    """Every marked field of the settings model, as dotted keys (derived from the model)."""
    if model is None:
        model = Settings
    out: list[Sensitive] = []
    for name, info in model.model_fields.items():
        key = prefix + (info.alias or name)
        extra = info.json_schema_extra
        if isinstance(extra, Mapping) and "touches" in extra:
            out.append(Sensitive(key, str(extra["touches"]), str(extra["workspace"])))
        for sub, suffix in _models_in(info.annotation):
            out += sensitive(sub, key + suffix + ".")
    return out


def _models_in(annotation: Any, suffix: str = "") -> Iterator[tuple[type[BaseModel], str]]:
    origin = get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, suffix
    elif origin in (list, tuple, set, frozenset):
        for arg in get_args(annotation):
            yield from _models_in(arg, suffix + "[]")
    elif origin in (Union, types.UnionType) or (origin is not None and get_args(annotation)):
        for arg in get_args(annotation):
            if arg is not Ellipsis:
                yield from _models_in(arg, suffix)


# --------------------------------------------------------------------------- refusals


@dataclass(frozen=True)
class Refusal:
    source: str  # the layer: a file's path, "workspace settings (editor)"
    key: str
    value: str
    reason: str

    @property
    def message(self) -> str:
        return f"{self.key} = {self.value!r} from {self.source} is ignored: {self.reason}"


OUTSIDE = "it names a file outside the workspace folders; only your user settings, config.toml or the environment may"
NO_FOLDER = "it names a file and no workspace folder is open to hold it"
RESTRICTED = "the workspace is not trusted (Restricted Mode): its settings name no files"


def _target(raw: str, base: Path | None) -> str | None:
    """Where the setting's reader will look for ``raw`` (None: nowhere it can be confined to)."""
    path = Path(raw.strip()).expanduser()
    if not path.is_absolute():
        if base is None:
            return None
        path = base / path
    return os.path.abspath(path)


def _verdict(raw: str, base: Path | None, roots: Sequence[str], trusted: bool) -> str | None:
    if not trusted:
        return RESTRICTED
    target = _target(raw, base)
    if target is None:
        return NO_FOLDER
    return None if is_within(realpath(target), roots) else OUTSIDE


def confine(
    layer: Mapping[str, Any], folders: Sequence[Path], source: str, *, trusted: bool
) -> tuple[dict[str, Any], list[Refusal]]:
    """``layer`` (camelCase keys) without the file-naming values a workspace may not set, and why each went."""
    out = dict(layer)
    refusals: list[Refusal] = []
    base = Path(folders[0]) if folders else None
    roots = real_roots(folders)

    for key in ("systemPromptFile", "writeSystemPromptTo"):
        raw = out.get(key)
        if not isinstance(raw, str) or raw.strip().lower() in ("", "0", "false"):
            continue  # off: names no file
        if raw.strip().lower() in ("1", "true"):  # the default file in the first folder
            why = RESTRICTED if not trusted else (None if folders else NO_FOLDER)
        else:
            why = _verdict(raw, base, roots, trusted)
        if why is not None:
            refusals.append(Refusal(source, key, raw, why))
            del out[key]

    tokens = out.get("tokens")
    if isinstance(tokens, Mapping) and isinstance(tokens.get("encodingFile"), str) and tokens["encodingFile"]:
        raw = tokens["encodingFile"]
        # The tokenizer reads a relative encoding file from the server's working folder.
        why = _verdict(raw, Path.cwd(), roots, trusted)
        if why is not None:
            refusals.append(Refusal(source, "tokens.encodingFile", raw, why))
            out["tokens"] = {k: v for k, v in tokens.items() if k != "encodingFile"}

    prompt = out.get("systemPrompt")
    if isinstance(prompt, Mapping) and isinstance(prompt.get("contributors"), list):
        kept: list[Any] = []
        for i, contributor in enumerate(prompt["contributors"]):
            files = contributor.get("files") if isinstance(contributor, Mapping) else None
            if not isinstance(files, list):
                kept.append(contributor)
                continue
            good = []
            for j, raw in enumerate(files):
                why = _verdict(raw, base, roots, trusted) if isinstance(raw, str) else None
                if why is None:
                    good.append(raw)
                else:
                    refusals.append(Refusal(source, f"systemPrompt.contributors[{i}].files[{j}]", raw, why))
            if good:
                kept.append({**contributor, "files": good})
            # a file contributor left with no file is dropped whole (it would have nothing to read)
        out["systemPrompt"] = {**prompt, "contributors": kept}
    return out, refusals


# --------------------------------------------------------------------------- secret floor


def secret_floor(
    exclude: list[str], redact: bool, floor_exclude: list[str], floor_redact: bool, source: str
) -> tuple[list[str], bool, list[Refusal]]:
    """The secret protection a workspace's values leave in force: its own ``context.exclude``
    patterns first, then the user's (built-in by default) after them, so the last pattern that
    matches (which decides) is the user's wherever the user's patterns speak: a workspace adds
    exclusions and cannot remove one (nor re-include with ``!``). ``redactSecrets`` stays on when
    the user's layers have it on (said in a :class:`Refusal`)."""
    refusals: list[Refusal] = []
    if exclude != floor_exclude:  # additive by definition: nothing of the workspace's is ignored
        exclude = [*exclude, *floor_exclude]
    if floor_redact and not redact:
        refusals.append(
            Refusal(source, "context.redactSecrets", "false", "a workspace may not switch secret redaction off")
        )
        redact = True
    return exclude, redact, refusals
