"""Where settings come from: the layers (user file, workspace file, editor, environment), read,
checked one by one and merged into one :class:`~.models.Settings`.

Layers, lowest to highest priority:

1. the defaults (:mod:`.models`);
2. the user file ``config.toml`` in the platformdirs user config dir for ``context-companion``;
3. the workspace file ``.context-companion.toml`` (first workspace folder that has one);
4. the editor's settings (initializationOptions / ``workspace/configuration``);
5. environment variables ``CONTEXT_COMPANION_*``.

Each layer is validated on its own first, so an error names the layer it came from.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from ..errors import SettingsError
from .models import BUILTIN_SECTION_IDS, Settings, validate_layer
from .provenance import EDITOR_META, USER_VALUES, WORKSPACE_TRUSTED, Refusal, confine, secret_floor

log = logging.getLogger(__name__)

ENV_PREFIX = "CONTEXT_COMPANION_"
APP_NAME = "context-companion"
WORKSPACE_SETTINGS_FILE = ".context-companion.toml"


def _normalise_keys(data: Any) -> Any:
    """snake_case → camelCase for dict keys, recursively (so layers merge key by key)."""
    if isinstance(data, Mapping):
        return {(to_camel(k) if isinstance(k, str) and "_" in k else k): _normalise_keys(v) for k, v in data.items()}
    return data


def deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``over`` into a copy of ``base``; nested tables merge, everything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) and key != "systemPrompt":
            out[key] = deep_merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def editor_layer(initialization_options: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """The editor's one layer: ``initializationOptions``, with the client's later answer
    (``workspace/configuration`` or ``didChangeConfiguration`` settings) merged over it key by key.

    A null value sets nothing (the value below it stays), so an answer of ``{}``, ``null`` or a
    partial table never erases what the initialization options set."""
    return deep_merge(_without_nulls(_normalise_keys(initialization_options)), _without_nulls(_normalise_keys(answer)))


def _without_nulls(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if value is None:
            continue
        out[key] = _without_nulls(value) if isinstance(value, Mapping) and key != "systemPrompt" else value
    return out


def user_config_dir() -> Path:
    """The user's config dir for context-companion (``CONTEXT_COMPANION_CONFIG_DIR`` overrides)."""
    override = os.environ.get(ENV_PREFIX + "CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_config_dir as _ucd

    return Path(_ucd(APP_NAME, appauthor=False))


def read_toml(path: Path) -> dict[str, Any]:
    """Read a TOML settings file. Raises :class:`SettingsError` naming the file."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
            return data
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(str(path), "", f"not valid TOML: {exc}") from None
    except OSError as exc:
        raise SettingsError(str(path), "", f"cannot read: {exc.strerror or exc}") from None


_FIELD_INDEX: dict[type[BaseModel], dict[str, tuple[str, Any]]] = {}


def _fields_of(model: type[BaseModel]) -> dict[str, tuple[str, Any]]:
    """``{folded name: (alias, annotation)}`` where folded drops case and underscores."""
    if model not in _FIELD_INDEX:
        _FIELD_INDEX[model] = {
            name.replace("_", "").lower(): (info.alias or name, info.annotation)
            for name, info in model.model_fields.items()
        }
    return _FIELD_INDEX[model]


def _parse_env_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def env_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    """Settings from ``CONTEXT_COMPANION_*`` variables.

    * ``CONTEXT_COMPANION_<FIELD>__<FIELD>`` sets any setting; ``__`` separates nesting levels,
      names match case-insensitively with or without underscores
      (``CONTEXT_COMPANION_MEMORY__MAX_TOKENS=2000``). Values are JSON when they parse as JSON
      (numbers, booleans, lists), else plain strings.
    * ``CONTEXT_COMPANION_PROMPT_<ID>=0|false|1|true`` switches a built-in section.
    * ``CONTEXT_COMPANION_SYSTEM_MD`` and ``CONTEXT_COMPANION_WRITE_SYSTEM_MD`` (see docs/prompt.md).
    """
    out: dict[str, Any] = {}
    section_ids = {s.lower(): s for s in BUILTIN_SECTION_IDS}
    for key in sorted(environ):
        if not key.startswith(ENV_PREFIX):
            continue
        rest = key[len(ENV_PREFIX) :]
        raw = environ[key]
        if rest in ("SYSTEM_MD", "WRITE_SYSTEM_MD", "CONFIG_DIR", "LOG_LEVEL"):
            continue  # handled where they are used
        if rest.startswith("PROMPT_") and "__" not in rest:
            section = section_ids.get(rest[len("PROMPT_") :].lower())
            if section is None:
                raise SettingsError(
                    "environment", key, f"unknown section; expected one of {', '.join(BUILTIN_SECTION_IDS)}"
                )
            out.setdefault("prompt", {}).setdefault("sections", {})[section] = _env_switch(key, raw)
            continue
        parts = rest.split("__")
        model: type[BaseModel] | None = Settings
        target = out
        path: list[str] = []
        for i, part in enumerate(parts):
            fields = _fields_of(model) if model is not None else {}
            hit = fields.get(part.replace("_", "").lower())
            if hit is None:
                raise SettingsError("environment", key, "unknown setting")
            alias, annotation = hit
            path.append(alias)
            if i == len(parts) - 1:
                target[alias] = _parse_env_value(raw)
            else:
                target = target.setdefault(alias, {})
                model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return out


def _env_switch(key: str, raw: str) -> bool:
    """An on/off environment value (``0``/``false``/``no``/``off`` or ``1``/``true``/``yes``/``on``)."""
    value = raw.strip().lower()
    if value in ("0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise SettingsError("environment", key, f"expected 0, 1, true or false, got {raw!r}")


def system_md_env(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """``CONTEXT_COMPANION_SYSTEM_MD`` → ``("switch"|"off"|"path", value)`` or None when unset."""
    raw = environ.get(ENV_PREFIX + "SYSTEM_MD")
    if raw is None or raw.strip() == "":
        return None
    low = raw.strip().lower()
    if low in ("1", "true"):
        return ("switch", "")
    if low in ("0", "false"):
        return ("off", "")
    return ("path", raw.strip())


def resolve_settings(
    workspace_folders: list[Path] | tuple[Path, ...] = (),
    editor: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_dir: Path | None = None,
) -> Settings:
    """Resolve the layered settings. Raises :class:`SettingsError` naming the bad layer."""
    return resolve_with_refusals(workspace_folders, editor, environ, user_dir)[0]


EDITOR_WORKSPACE = "workspace settings (editor)"


def resolve_with_refusals(
    workspace_folders: list[Path] | tuple[Path, ...] = (),
    editor: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_dir: Path | None = None,
) -> tuple[Settings, tuple[Refusal, ...]]:
    """The layered settings, and the workspace values left out (see :mod:`.provenance`): a value
    that may come from the workspace names no file outside it (none at all in Restricted Mode)
    and cannot remove the user's secret protection. Raises :class:`SettingsError` naming the bad layer."""
    environ = os.environ if environ is None else environ
    folders = tuple(Path(f) for f in workspace_folders)
    editor_values, user_keys, trusted = split_editor(editor or {})
    # (source, data, the user's own?)
    layers: list[tuple[str, Mapping[str, Any], bool]] = []
    user_file = (user_dir if user_dir is not None else user_config_dir()) / "config.toml"
    if user_file.is_file():
        layers.append((str(user_file), read_toml(user_file), True))
    for folder in folders:
        ws_file = folder / WORKSPACE_SETTINGS_FILE
        if ws_file.is_file():
            layers.append((str(ws_file), read_toml(ws_file), False))
            break
    if editor_values:
        validate_layer(editor_values, "editor settings")
        mine, theirs = split_user_values(_normalise_keys(editor_values), user_keys)
        if mine:
            layers.append(("user settings (editor)", mine, True))
        if theirs:
            layers.append((EDITOR_WORKSPACE, theirs, False))
    env = env_layer(environ)
    if env:
        layers.append(("environment", env, True))

    refusals: list[Refusal] = []
    merged: dict[str, Any] = {}
    users: dict[str, Any] = {}
    last_workspace = ""
    for source, data, own in layers:
        validate_layer(data, source)
        values = _normalise_keys(data)
        if not own:
            values, refused = confine(values, folders, source, trusted=trusted)
            refusals += refused
            if "context" in values:
                last_workspace = source
        else:
            users = deep_merge(users, values)
        merged = deep_merge(merged, values)
    settings = validate_layer(merged, "settings")
    if last_workspace:  # a workspace layer spoke about context: keep the user's secret protection
        floor = validate_layer(users, "settings").context
        exclude, redact, refused = secret_floor(
            list(settings.context.exclude),
            settings.context.redact_secrets,
            list(floor.exclude),
            floor.redact_secrets,
            last_workspace,
        )
        refusals += refused
        context = settings.context.model_copy(update={"exclude": exclude, "redact_secrets": redact})
        settings = settings.model_copy(update={"context": context})
    return settings, tuple(refusals)


def split_editor(section: Mapping[str, Any]) -> tuple[dict[str, Any], frozenset[str] | None, bool]:
    """The editor's settings apart from what the payload says about them: the keys whose values
    are the user's own (``userValues``; None: the client did not say) and whether the workspace
    is trusted (``workspaceTrusted``; true when not said). Raises :class:`SettingsError`."""
    values = {k: v for k, v in section.items() if k not in EDITOR_META}
    raw_keys = section.get(USER_VALUES)
    if raw_keys is not None and not (isinstance(raw_keys, list) and all(isinstance(k, str) for k in raw_keys)):
        raise SettingsError("editor settings", USER_VALUES, "expected a list of setting names")
    trusted = section.get(WORKSPACE_TRUSTED, True)
    if not isinstance(trusted, bool):
        raise SettingsError("editor settings", WORKSPACE_TRUSTED, f"expected true or false, got {trusted!r}")
    return values, (frozenset(raw_keys) if raw_keys is not None else None), trusted


def split_user_values(values: Mapping[str, Any], keys: frozenset[str] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``values`` split into (the user's own, the rest) by dotted ``keys``."""
    if not keys:
        return {}, dict(values)
    own: dict[str, Any] = {}
    rest = dict(values)
    for key in sorted(keys):
        path = key.split(".")
        node: Any = rest
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping) or path[-1] not in node:
            continue
        target = own
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = node[path[-1]]
        rest = _without(rest, path)
    return own, rest


def _without(values: Mapping[str, Any], path: list[str]) -> dict[str, Any]:
    out = dict(values)
    if len(path) == 1:
        out.pop(path[0], None)
    elif isinstance(out.get(path[0]), Mapping):
        inner = _without(out[path[0]], path[1:])
        if inner:
            out[path[0]] = inner
        else:
            del out[path[0]]
    return out


def allowed_origins() -> frozenset[str]:
    """``server.allowedOrigins`` from the user's config file and the environment: a socket's
    handshake comes before ``initialize``, so editor and workspace settings cannot widen it.
    Settings in error allow no Origin (said in the log)."""
    try:
        return frozenset(o.rstrip("/") for o in resolve_settings().server.allowed_origins)
    except SettingsError as exc:
        log.warning("settings: %s; no Origin is allowed", exc)
        return frozenset()
