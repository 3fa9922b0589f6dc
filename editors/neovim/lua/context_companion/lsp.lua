--- The language client: how the server is started, which workspace a buffer belongs to, how server
--- commands are called, and what happens on `contextCompanion/systemInstructionChanged`.

local config = require('context_companion.config')

local M = {}

M.NAME = config.NAME
M.CHANGED = 'contextCompanion/systemInstructionChanged'
M.CURSOR = 'contextCompanion/didChangeCursor'
M.INSTALL_HINT = "run :ContextCompanionInstall (it installs the server into Neovim's data folder)"

local has_011 = vim.fn.has('nvim-0.11') == 1

M.state = {
  ---@type context_companion.Options?
  opts = nil,
  --- [client_id][session_id] = last full getSystemInstruction result (answers `unchanged` replies).
  cache = {},
  --- [client_id] = { etag, tokens, estimated } of the user's session (config.session_id).
  status = {},
}

--- The options given to setup(), or the defaults when the plugin runs through vim.lsp.enable().
---@return context_companion.Options
function M.options()
  if not M.state.opts then
    M.state.opts = assert(config.resolve({}))
  end
  return M.state.opts
end

-- ------------------------------------------------------------------ client API across 0.10 / 0.11
-- 0.11 made these methods (client:request); 0.10 has closures (client.request). Calling the other
-- form is either broken (0.10) or deprecated with a warning (0.11).

function M.request(client, method, params, handler, bufnr)
  if has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.request_sync(client, method, params, timeout_ms, bufnr)
  if has_011 then
    return client:request_sync(method, params, timeout_ms, bufnr)
  end
  return client.request_sync(method, params, timeout_ms, bufnr)
end

function M.notify(client, method, params)
  if has_011 then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

-- ------------------------------------------------------------------ messages

---@param msg string
---@param level integer?
function M.message(msg, level)
  vim.notify('Context Companion: ' .. msg, level or vim.log.levels.INFO, { title = 'Context Companion' })
end

-- ------------------------------------------------------------------ the server command

--- The server command when the user set none (a user's `cmd` always wins): the server
--- :ContextCompanionInstall put in Neovim's data folder (installed from this plugin's own checkout, so
--- of the plugin's version), else `context-companion` on PATH, else the module via python3.
---@return string[]
function M.default_cmd()
  local installed = require('context_companion.install').executable()
  if installed then
    return { installed, 'serve' }
  end
  if vim.fn.executable('context-companion') == 1 then
    return { 'context-companion', 'serve' }
  end
  return { vim.fn.has('win32') == 1 and 'python' or 'python3', '-m', 'context_companion', 'serve' }
end

--- The interpreter part of a `<python> -m context_companion …` command, if it is one.
---@param cmd any
---@return string[]?
function M.python_of(cmd)
  if type(cmd) ~= 'table' then
    return nil
  end
  for i = 1, #cmd - 1 do
    if cmd[i] == '-m' and cmd[i + 1] == 'context_companion' then
      return i > 1 and vim.list_slice(cmd, 1, i - 1) or nil
    end
  end
  return nil
end

--- Another `context-companion` subcommand with the program the server runs from: the same
--- interpreter (`<python> -m context_companion …`), the same program when `cmd` runs `… serve`,
--- else `context-companion` on PATH (a `cmd` function or `connect` gives no program to reuse).
---@param args string[]
---@return string[]
function M.cli_cmd(args)
  local cmd = M.options().cmd or M.default_cmd()
  local python = M.python_of(cmd)
  if python then
    return vim.list_extend(vim.list_extend(vim.deepcopy(python), { '-m', 'context_companion' }), args)
  end
  if type(cmd) == 'table' then
    for i = 2, #cmd do
      if cmd[i] == 'serve' then
        return vim.list_extend(vim.list_slice(cmd, 1, i - 1), args)
      end
    end
  end
  return vim.list_extend({ 'context-companion' }, args)
end

--- Tell the user why the server stopped, with the pip command when the package is missing.
---@param cmd any
---@param code integer
local function explain_exit(cmd, code)
  local python = M.python_of(cmd)
  local shown = type(cmd) == 'table' and table.concat(cmd, ' ') or 'the server command'
  local generic = ('the server (%s) exited with code %d; :LspLog has its output.'):format(shown, code)
  if not python then
    M.message(generic, vim.log.levels.ERROR)
    return
  end
  local probe = vim.list_extend(vim.deepcopy(python), { '-c', 'import context_companion' })
  local ok = pcall(vim.system, probe, { text = true, cwd = require('context_companion.install').launch_dir() }, function(result)
    vim.schedule(function()
      if result.code ~= 0 then
        local py = table.concat(python, ' ')
        M.message(
          ('the server is not installed for %s: %s, or set `cmd` in require("context_companion").setup().'):format(
            py,
            M.INSTALL_HINT
          ),
          vim.log.levels.ERROR
        )
      else
        M.message(generic, vim.log.levels.ERROR)
      end
    end)
  end)
  if not ok then
    M.message(generic, vim.log.levels.ERROR)
  end
end

---@param cmd any
---@return fun(code: integer, signal: integer, client_id: integer)
function M.on_exit_for(cmd)
  return function(code, signal, client_id)
    M.state.cache[client_id] = nil
    M.state.status[client_id] = nil
    if code == 0 or (signal and signal ~= 0) then
      return
    end
    vim.schedule(function()
      if vim.v.exiting ~= vim.NIL then
        return
      end
      explain_exit(cmd, code)
    end)
  end
end

-- ------------------------------------------------------------------ workspaces

---@param path string
---@param dir string
local function is_under(path, dir)
  dir = dir:gsub('/+$', '')
  if dir == '' then
    return true
  end
  return path == dir or path:sub(1, #dir + 1) == dir .. '/'
end
M.is_under = is_under

---@param dir string
local function clean_dir(dir)
  local out = vim.fs.normalize(vim.fn.fnamemodify(dir, ':p'))
  if #out > 1 then
    out = out:gsub('/+$', '')
  end
  return out
end

--- The absolute path of a buffer that is a real file (or a file to be), else nil.
---@param bufnr integer
---@return string?
function M.buf_path(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then -- oil://, fugitive://, our own views
    return nil
  end
  return vim.fs.normalize(vim.fn.fnamemodify(name, ':p'))
end

--- The workspace root of a buffer: the folder of a running Context Companion client that holds the
--- file (so a sub-folder with its own AGENTS.md joins its workspace instead of starting a second
--- server), else `root_dir(bufnr)`, else the nearest folder with the first root marker found (a
--- memory file found below the working folder: the working folder, see `widen_to_cwd`).
---@param bufnr integer
---@return string?
function M.root_for(bufnr)
  local path = M.buf_path(bufnr)
  if not path then
    return nil
  end
  for _, client in ipairs(vim.lsp.get_clients({ name = M.NAME })) do
    for _, folder in ipairs(client.workspace_folders or {}) do
      local dir = vim.uri_to_fname(folder.uri)
      if is_under(path, dir) then
        return dir
      end
    end
  end
  local opts = M.options()
  if opts.root_dir then
    local ok, root = pcall(opts.root_dir, bufnr)
    if not ok then
      vim.notify_once('Context Companion: root_dir() failed: ' .. tostring(root), vim.log.levels.ERROR)
      return nil
    end
    if root == nil then
      return nil
    end
    if type(root) ~= 'string' or vim.fn.isdirectory(root) == 0 then
      vim.notify_once(
        ('Context Companion: root_dir() returned %s, which is not a directory'):format(vim.inspect(root)),
        vim.log.levels.ERROR
      )
      return nil
    end
    return clean_dir(root)
  end
  for _, marker in ipairs(opts.root_markers) do
    local root = vim.fs.root(path, marker)
    if root then
      return M.widen_to_cwd(clean_dir(root), marker)
    end
  end
  return nil
end

--- A memory file (a Markdown marker such as AGENTS.md) found in a folder below the one Neovim
--- works in marks that sub-folder's memory, not the workspace: the workspace is then the working
--- folder, as for the CLI run there and VS Code opened on it (api/AGENTS.md must not hide the
--- AGENTS.md above it). Not when the working folder is the home folder or `/`: a file opened from
--- there keeps the nearest marker, as before. `.git` and the settings file mark a root anywhere.
---@param root string
---@param marker string
---@return string
function M.widen_to_cwd(root, marker)
  if not marker:lower():match('%.md$') then
    return root
  end
  local cwd = clean_dir(vim.fn.getcwd())
  local home = vim.uv.os_homedir()
  if cwd == '/' or (home and cwd == clean_dir(home)) or cwd == root or not is_under(root, cwd) then
    return root
  end
  return cwd
end

-- ------------------------------------------------------------------ client configuration

--- Deep-merge where lists replace lists (tbl_deep_extend would merge them index by index, so
--- `positionEncodings = {'utf-16'}` would keep the defaults' second and third entries).
local function merge(base, over)
  if type(base) ~= 'table' or type(over) ~= 'table' or vim.islist(over) or vim.islist(base) then
    return over
  end
  local out = vim.deepcopy(base)
  for k, v in pairs(over) do
    out[k] = merge(out[k], v)
  end
  return out
end

--- JSON needs `{}` for "no settings" (an empty Lua table is encoded as `[]`).
---@param settings table
local function wire_settings(settings)
  if next(settings) == nil then
    return vim.empty_dict()
  end
  return vim.deepcopy(settings)
end
M.wire_settings = wire_settings

--- Handlers for the server's notifications (shared by setup() and vim.lsp.enable()).
function M.handlers()
  local handlers = require('context_companion.gemini').handlers()
  handlers[M.CHANGED] = function(err, params, ctx)
    M.on_instruction_changed(err, params, ctx)
  end
  return handlers
end

--- What the plugin can do beyond LSP, announced in initializationOptions (beside the settings).
M.CLIENT_CAPABILITIES = { showDiff = true }

--- Attach to a running `serve --tcp`: the port and token from `connect`, else from the discovery
--- file of the server whose workspace folders hold `root`. The token travels in
--- initializationOptions.authToken, which the server checks before anything else.
---@param connect {host?: string, port?: integer, token?: string}
---@param root string
---@param settings table
---@return any cmd, table init_options
function M.connect_cmd(connect, root, settings)
  local port, token = connect.port, connect.token
  if not port or port == 0 or not token then
    local found = require('context_companion.discovery').find(root, 'tcp', port)
    if not found then
      error(
        ('Context Companion: connect: no running server (context-companion serve --tcp) announces %s in its discovery file; set connect.port and connect.token'):format(root),
        0
      )
    end
    port = found.port
    token = token or found.token
  end
  local init_options = vim.deepcopy(settings)
  init_options.authToken = token
  init_options.capabilities = M.CLIENT_CAPABILITIES
  return vim.lsp.rpc.connect(connect.host or '127.0.0.1', port), init_options
end

--- The configuration for vim.lsp.start().
---@param root string
---@return vim.lsp.ClientConfig
function M.client_config(root)
  local opts = M.options()
  local settings = wire_settings(opts.settings)
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  if opts.capabilities then
    capabilities = merge(capabilities, opts.capabilities)
  end
  local cmd = opts.cmd or M.default_cmd()
  local init_options = vim.tbl_extend('force', {}, settings, { capabilities = M.CLIENT_CAPABILITIES })
  if opts.connect then
    cmd, init_options = M.connect_cmd(opts.connect, root, settings)
  end
  return {
    name = M.NAME,
    cmd = cmd,
    -- Started in the plugin's launch folder, never the project: `python3 -m context_companion` imports from
    -- its working folder first. The server takes the project from workspace_folders/root_dir.
    cmd_cwd = require('context_companion.install').launch_dir(),
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = init_options,
    settings = { contextCompanion = settings },
    capabilities = capabilities,
    handlers = M.handlers(),
    on_exit = M.on_exit_for(cmd),
  }
end

---@param client vim.lsp.Client
---@param cfg vim.lsp.ClientConfig
function M.reuse_client(client, cfg)
  return client.name == cfg.name and client.root_dir == cfg.root_dir
end

--- Start (or reuse) the client for a buffer that lies in a workspace; attach the buffer to it.
---@param bufnr integer
---@return integer? client_id
function M.start(bufnr)
  local root = M.root_for(bufnr)
  if not root then
    return nil
  end
  local ok, cfg = pcall(M.client_config, root)
  if not ok then
    vim.notify_once(tostring(cfg), vim.log.levels.ERROR)
    return nil
  end
  if type(cfg.cmd) == 'table' and vim.fn.executable(cfg.cmd[1]) == 0 then
    vim.notify_once(
      ('Context Companion: cannot start the server: %q is not an executable on PATH. To install it, %s, or set `cmd` in require("context_companion").setup().'):format(
        cfg.cmd[1],
        M.INSTALL_HINT
      ),
      vim.log.levels.ERROR
    )
    return nil
  end
  return vim.lsp.start(cfg, { bufnr = bufnr, reuse_client = M.reuse_client })
end

--- Send changed settings to every running client (setup() called again).
function M.push_settings()
  local settings = wire_settings(M.options().settings)
  for _, client in ipairs(vim.lsp.get_clients({ name = M.NAME })) do
    client.settings = { contextCompanion = settings }
    if client.config then
      client.config.settings = client.settings
    end
    M.notify(client, 'workspace/didChangeConfiguration', { settings = client.settings })
  end
end

-- ------------------------------------------------------------------ calling the server

--- The client a call is meant for: `opts.client_id`, else the one attached to the buffer, else the
--- one a view buffer belongs to, else the one whose workspace holds the buffer or the cwd.
---@param opts? { bufnr?: integer, client_id?: integer }
---@return vim.lsp.Client?, string?
function M.client_for(opts)
  opts = opts or {}
  local function not_running()
    local markers = table.concat(M.options().root_markers, ', ')
    return nil,
      ('not running for this buffer. Open a file inside a workspace (a folder with %s) after calling require("context_companion").setup(); :checkhealth context_companion tells more.'):format(
        markers
      )
  end
  if opts.client_id then
    local client = vim.lsp.get_client_by_id(opts.client_id)
    if client and client.name == M.NAME then
      return client
    end
    return nil, ('no Context Companion client with id %s'):format(tostring(opts.client_id))
  end
  local bufnr = opts.bufnr
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  if type(bufnr) ~= 'number' or not vim.api.nvim_buf_is_valid(bufnr) then
    return nil, ('bufnr: %s is not a valid buffer'):format(tostring(opts.bufnr))
  end
  local attached = vim.lsp.get_clients({ bufnr = bufnr, name = M.NAME })[1]
  if attached then
    return attached
  end
  local view_client = vim.b[bufnr].context_companion_client
  if view_client then
    local client = vim.lsp.get_client_by_id(view_client)
    if client then
      return client
    end
  end
  local all = vim.lsp.get_clients({ name = M.NAME })
  if #all == 0 then
    return not_running()
  end
  local root = M.root_for(bufnr)
  local cwd = vim.fs.normalize(vim.fn.getcwd())
  for _, client in ipairs(all) do
    if client.root_dir and ((root and client.root_dir == root) or is_under(cwd, client.root_dir)) then
      return client
    end
  end
  if #all == 1 then
    return all[1]
  end
  return not_running()
end

--- `getTurnContext` → `contextCompanion.getTurnContext`.
---@param name string
function M.command_name(name)
  if not name:find('^contextCompanion%.') then
    return 'contextCompanion.' .. name
  end
  return name
end

---@param client vim.lsp.Client
---@param timeout_ms integer
---@param fn fun(ok: boolean)
local function when_initialized(client, timeout_ms, fn)
  if client.initialized then
    return fn(true)
  end
  local waited = 0
  local timer = assert(vim.uv.new_timer())
  timer:start(20, 20, function()
    waited = waited + 20
    if client.initialized or waited >= timeout_ms then
      timer:stop()
      timer:close()
      vim.schedule(function()
        fn(client.initialized == true)
      end)
    end
  end)
end

--- Run one `workspace/executeCommand`.
---
--- With `cb`, returns at once and calls `cb(err, result)` later; without, waits (up to
--- `opts.timeout_ms`) and returns `result, err`. `err` is a table with `message` (and `code` when the
--- server answered with an error).
---@param command string
---@param args table?
---@param opts? { bufnr?: integer, client_id?: integer, timeout_ms?: integer }
---@param cb? fun(err: table?, result: any, client: vim.lsp.Client?)
---@return any result, table? err
function M.execute(command, args, opts, cb)
  opts = opts or {}
  local timeout = opts.timeout_ms or M.options().timeout_ms
  local name = M.command_name(command)
  local client, why = M.client_for(opts)
  if not client then
    local err = { message = why }
    if cb then
      vim.schedule(function()
        cb(err, nil, nil)
      end)
      return nil
    end
    return nil, err
  end
  if args == nil or next(args) == nil then
    args = vim.empty_dict()
  end
  -- The server answers from the editor state it knows: send a pending cursor move first.
  require('context_companion.cursor').flush()
  local params = { command = name, arguments = { args } }
  local bufnr = opts.bufnr or 0

  if cb then
    when_initialized(client, timeout, function(ready)
      if not ready then
        return cb({ message = ('the server did not finish starting within %d ms'):format(timeout) }, nil, client)
      end
      local ok = M.request(client, 'workspace/executeCommand', params, function(err, result)
        cb(err, result, client)
      end, bufnr)
      if not ok then
        cb({ message = 'the server has stopped' }, nil, client)
      end
    end)
    return nil
  end

  if not client.initialized then
    vim.wait(timeout, function()
      return client.initialized == true
    end, 10)
    if not client.initialized then
      return nil, { message = ('the server did not finish starting within %d ms'):format(timeout) }
    end
  end
  local response, failure = M.request_sync(client, 'workspace/executeCommand', params, timeout, bufnr)
  if not response then
    if failure == 'timeout' then
      return nil, { message = ('%s: no answer within %d ms'):format(name, timeout) }
    end
    return nil, { message = ('%s: %s'):format(name, failure or 'the server has stopped') }
  end
  if response.err then
    return nil, response.err
  end
  return response.result, nil
end

-- ------------------------------------------------------------------ the push

local REASONS = {
  memoryChanged = 'memory changed',
  rulesChanged = 'rules changed',
  settingsChanged = 'settings changed',
  workspaceChanged = 'workspace changed',
  openFilesChanged = 'open files changed',
}

--- "system instruction updated (memory changed: AGENTS.md) · 2412 tokens"
---@param params table
---@return string
function M.change_message(params)
  local what = REASONS[params.reason] or tostring(params.reason or 'changed')
  local files = type(params.changedFiles) == 'table' and params.changedFiles or {}
  if #files > 0 then
    local shown = vim.list_slice(files, 1, 3)
    what = what .. ': ' .. table.concat(vim.tbl_map(tostring, shown), ', ')
    if #files > 3 then
      what = what .. (' and %d more'):format(#files - 3)
    end
  end
  local total = type(params.tokens) == 'table' and params.tokens.total or nil
  local tokens = type(total) == 'number' and (' · %d tokens'):format(total) or ''
  return ('system instruction updated (%s)%s'):format(what, tokens)
end

---@param params table
---@param ctx lsp.HandlerContext
function M.on_instruction_changed(_, params, ctx)
  if type(params) ~= 'table' then
    return
  end
  local client_id = ctx and ctx.client_id
  local sessions = type(params.sessions) == 'table' and params.sessions or {}
  if client_id and vim.tbl_contains(sessions, M.options().session_id) then
    local status = M.state.status[client_id] or {}
    status.etag = params.etag
    status.tokens = type(params.tokens) == 'table' and params.tokens.total or status.tokens
    M.state.status[client_id] = status
  end
  vim.schedule(function()
    local level = M.options().notify_level
    if level then
      M.message(M.change_message(params), level)
    end
    local data = vim.deepcopy(params)
    data.client_id = client_id
    vim.api.nvim_exec_autocmds('User', { pattern = 'ContextCompanionChanged', modeline = false, data = data })
    require('context_companion.views').on_changed(client_id, params)
  end)
end

return M
