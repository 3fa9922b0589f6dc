--- Context Companion for Neovim: runs the Context Companion language server for every buffer in a
--- workspace, reports the cursor and selection, and gives agent plugins the system instruction and
--- the per-turn editor context.
---
--- See :help context-companion and docs/editors/neovim.md.

local config = require('context_companion.config')
local lsp = require('context_companion.lsp')

local M = {}

local api = vim.api

--- Options that stay in Neovim; every other key of an API call's `opts` goes to the server.
local LOCAL_KEYS = { bufnr = true, client_id = true, timeout_ms = true }

---@param opts any
---@return table? local_opts, table? args, string? err
local function split_opts(opts)
  if opts == nil then
    return {}, {}
  end
  if type(opts) ~= 'table' then
    return nil, nil, ('opts: expected a table, got %s'):format(type(opts))
  end
  local local_opts, args = {}, {}
  for key, value in pairs(opts) do
    if LOCAL_KEYS[key] then
      local_opts[key] = value
    else
      args[key] = value
    end
  end
  return local_opts, args
end

--- Report an error the way the caller asked: cb(err) later, or `nil, err` now.
local function fail(cb, message)
  local err = { message = message }
  if cb then
    vim.schedule(function()
      cb(err, nil)
    end)
    return nil
  end
  return nil, err
end

--- Start Context Companion: the server starts for any buffer inside a workspace (a folder with
--- `.git`, `.context-companion.toml` or a memory file). Calling it again applies new options,
--- and sends new `settings` to running servers.
---@param opts? context_companion.Options|{autostart?: boolean}
---@return boolean ok
function M.setup(opts)
  local autostart = true
  if type(opts) == 'table' and opts.autostart ~= nil then
    autostart = opts.autostart
    opts = vim.deepcopy(opts)
    opts.autostart = nil
  end
  local resolved, err = config.resolve(opts)
  if not resolved then
    lsp.message(('setup(): %s. Nothing was started.'):format(err), vim.log.levels.ERROR)
    return false
  end
  local again = M._did_setup == true
  lsp.state.opts = resolved
  M._did_setup = true

  local group = api.nvim_create_augroup('context_companion', { clear = true })
  if autostart then
    local function start(bufnr)
      local ok, start_err = pcall(lsp.start, bufnr)
      if not ok then
        lsp.message('could not start the server: ' .. tostring(start_err), vim.log.levels.ERROR)
      end
    end
    api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufFilePost' }, {
      group = group,
      desc = 'Context Companion: attach buffers in a workspace',
      callback = function(args)
        start(args.buf)
      end,
    })
    for _, bufnr in ipairs(api.nvim_list_bufs()) do
      if api.nvim_buf_is_loaded(bufnr) then
        start(bufnr)
      end
    end
  end
  if again then
    lsp.push_settings()
  end
  return true
end

--- The Context Companion client for a buffer (default: current), or nil.
---@param bufnr? integer
---@return vim.lsp.Client?
function M.client(bufnr)
  return (lsp.client_for({ bufnr = bufnr }))
end

--- Run any server command (`"buildMessages"` or `"contextCompanion.buildMessages"`) with one JSON
--- object argument. Asynchronous with `cb(err, result)`; without `cb` it waits and returns
--- `result, err`. `opts`: `bufnr`, `client_id`, `timeout_ms`.
---@param command string
---@param args? table
---@param opts? { bufnr?: integer, client_id?: integer, timeout_ms?: integer }
---@param cb? fun(err: table?, result: any)
---@return any result, table? err
function M.execute(command, args, opts, cb)
  if type(command) ~= 'string' or command == '' then
    return fail(cb, 'command: expected a command name such as "getTurnContext"')
  end
  if args ~= nil and type(args) ~= 'table' then
    return fail(cb, ('args: expected a table, got %s'):format(type(args)))
  end
  if cb ~= nil and type(cb) ~= 'function' then
    return fail(nil, ('cb: expected a function, got %s'):format(type(cb)))
  end
  local local_opts, _, err = split_opts(opts)
  if not local_opts then
    return fail(cb, err)
  end
  if cb then
    return lsp.execute(command, args, local_opts, function(e, result)
      cb(e, result)
    end)
  end
  return lsp.execute(command, args, local_opts)
end

--- getSystemInstruction, remembering the last text per session so an unchanged instruction is not
--- sent again (the request carries `ifNoneMatch`; the answer is always the full result unless the
--- caller passed `ifNoneMatch` itself).
---@param opts table
---@param cb? fun(err: table?, result: table?, client: vim.lsp.Client?)
local function instruction(opts, cb)
  local local_opts, args, err = split_opts(opts)
  if not local_opts then
    return fail(cb, err)
  end
  local client, why = lsp.client_for(local_opts)
  if not client then
    return fail(cb, why)
  end
  local_opts.client_id = client.id
  args.sessionId = args.sessionId == nil and lsp.options().session_id or args.sessionId
  local session = args.sessionId
  local caller_etag = args.ifNoneMatch
  local per_client = lsp.state.cache[client.id] or {}
  lsp.state.cache[client.id] = per_client
  local cached = type(session) == 'string' and per_client[session] or nil
  if caller_etag == nil and cached then
    args.ifNoneMatch = cached.etag
  end

  local function settle(e, result)
    if e then
      return nil, e
    end
    if type(result) ~= 'table' then
      return nil, { message = 'getSystemInstruction: the server sent no result' }
    end
    if result.unchanged then
      if caller_etag == nil and cached and cached.etag == result.etag then
        return vim.deepcopy(cached)
      end
      return result
    end
    per_client[session] = vim.deepcopy(result)
    if session == lsp.options().session_id then
      lsp.state.status[client.id] = {
        etag = result.etag,
        tokens = type(result.tokens) == 'table' and result.tokens.total or nil,
        estimated = type(result.tokens) == 'table' and result.tokens.estimated or nil,
      }
    end
    return result
  end

  if cb then
    lsp.execute('getSystemInstruction', args, local_opts, function(e, result)
      local value, problem = settle(e, result)
      cb(problem, value, client)
    end)
    return nil
  end
  local result, e = lsp.execute('getSystemInstruction', args, local_opts)
  return settle(e, result)
end

--- The system instruction of an agent session: `{sessionId, etag, unchanged, text, tokens,
--- memoryFiles, environmentContext}`.
---
--- `opts`: `sessionId` (default: the `session_id` option, "default"), `ifNoneMatch`, and the local
--- `bufnr`, `client_id`, `timeout_ms`. With `cb(err, result)` it is asynchronous; without, it waits
--- and returns `result, err` (use that form inside a plugin's synchronous system-prompt function).
---@param opts? table
---@param cb? fun(err: table?, result: table?)
---@return table? result, table? err
function M.system_instruction(opts, cb)
  if cb ~= nil and type(cb) ~= 'function' then
    return fail(nil, ('cb: expected a function, got %s'):format(type(cb)))
  end
  if cb then
    return instruction(opts, function(err, result)
      cb(err, result)
    end)
  end
  return instruction(opts)
end

--- The editor context for the agent's next turn: `{kind = "full"|"delta"|"none", context, text}`;
--- `text` is the user message to add before the user's own. It moves the session's baseline, so
--- call it once per turn.
---
--- `opts`: `sessionId`, `forceFull`, `pendingToolCall`, and the local `bufnr`, `client_id`,
--- `timeout_ms`. Asynchronous with `cb(err, result)`; without it waits and returns `result, err`.
---@param opts? table
---@param cb? fun(err: table?, result: table?)
---@return table? result, table? err
function M.turn_context(opts, cb)
  if cb ~= nil and type(cb) ~= 'function' then
    return fail(nil, ('cb: expected a function, got %s'):format(type(cb)))
  end
  local local_opts, args, err = split_opts(opts)
  if not local_opts then
    return fail(cb, err)
  end
  args.sessionId = args.sessionId == nil and lsp.options().session_id or args.sessionId
  if cb then
    return lsp.execute('getTurnContext', args, local_opts, function(e, result)
      cb(e, result)
    end)
  end
  return lsp.execute('getTurnContext', args, local_opts)
end

--- What the status line can show for a buffer's workspace: `{etag, tokens, estimated}` of the
--- user's session once it has been fetched or pushed, else nil.
---@param bufnr? integer
---@return { etag: string?, tokens: integer?, estimated: boolean? }?
function M.status(bufnr)
  local client = lsp.client_for({ bufnr = bufnr })
  if not client then
    return nil
  end
  local status = lsp.state.status[client.id]
  return status and vim.deepcopy(status) or nil
end

-- internal, for the user commands
M._instruction = instruction

return M
