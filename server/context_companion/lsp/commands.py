"""``workspace/executeCommand``: one handler per row of the command table.

A handler unpacks the argument with the row's params model, runs the row's function (after its
slow ``prepare`` step on a worker thread, if any) and maps domain errors to JSON-RPC errors:
``ParamsError``/``ProfileError``/``SettingsError`` → InvalidParams (-32602) naming the field,
``PromptError``/``FileWriteError`` → RequestFailed (-32803), anything else → InternalError without a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams

from ..errors import ContextCompanionError, FileWriteError, ParamsError, PromptError
from ..workspace.commands import COMMANDS, Command, Outcome
from .runtime import off_loop
from .texts import OpenTexts

if TYPE_CHECKING:
    from .runtime import CompanionServer

log = logging.getLogger(__name__)

REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed


def handler(ls: CompanionServer, command: Command) -> Callable[..., Awaitable[Any]]:
    async def run(*args: Any) -> Any:  # executeCommand spreads its arguments
        try:
            return await execute(ls, command, args)
        except ContextCompanionError as exc:
            raise _rpc_error(command.name, exc) from None
        except JsonRpcException:
            raise
        except Exception as exc:
            log.exception("%s failed", command.name)
            raise JsonRpcInternalError(message=f"{command.name} failed: {type(exc).__name__}: {exc}") from None

    return run


async def execute(ls: CompanionServer, command: Command, args: tuple[Any, ...]) -> Any:
    from ..workspace.params import parse

    await ls.booted.wait()
    params = parse(command.params_model(), args, command.name)
    if not command.workspace:
        return command.run(None, params, OpenTexts(ls))
    await ls.ready.wait()
    async with ls.lock:  # after a settings or folder swap already under way: answer with its result
        pass
    companion = ls.companion
    assert companion is not None
    texts = OpenTexts(ls)
    if command.prepare is not None:
        prepare = command.prepare
        prepared = await off_loop(ls, lambda: prepare(companion))
        result = command.run(companion, params, texts, prepared)
    else:
        result = command.run(companion, params, texts)
    if isinstance(result, Outcome):
        ls.files_applied(result.change)
        return result.result
    return result


def _rpc_error(name: str, exc: ContextCompanionError) -> JsonRpcException:
    if isinstance(exc, (PromptError, FileWriteError)):
        return JsonRpcException(code=REQUEST_FAILED, message=f"{name}: {exc}")
    # A ParamsError already names the command (or is about the session id alone).
    return JsonRpcInvalidParams(message=str(exc) if isinstance(exc, ParamsError) else f"{name}: {exc}")


def register(ls: CompanionServer) -> None:
    for command in COMMANDS:
        ls.command(command.name)(handler(ls, command))
