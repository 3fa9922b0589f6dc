--- Options of the Neovim plugin: defaults and validation.
---
--- Validation never throws at the user: `resolve()` returns either the merged options or one
--- message naming the option and what is wrong with it.

local M = {}

--- The LSP client name (also the name for `vim.lsp.config` / `vim.lsp.enable`).
M.NAME = 'context_companion'

--- The memory file that marks a workspace root when there is no `.git` above the file and the settings name no
--- `memory.fileNames`: the name every agent shares and :ContextCompanionAddMemory writes. The root is found before
--- the server starts, so it cannot ask the server for the names it reads; agents' own names (each agent's file,
--- which change as agents come) are left to the server, whose answers name them.
M.MEMORY_FILES = { 'AGENTS.md' }

---@class context_companion.Options
---@field cmd? string[]|fun(dispatchers: vim.lsp.rpc.Dispatchers): vim.lsp.rpc.PublicClient How to start the server (default: `context-companion serve` when on PATH, else `python3 -m context_companion serve`).
---@field settings? table The server's settings (camelCase, see docs/configuration.md): sent as initializationOptions and as the `contextCompanion` section of workspace/configuration.
---@field notify_level? integer|string|false Level of the message shown when the instruction changes (a vim.log.levels value or its name); false or "off" shows nothing.
---@field debounce_ms? integer Quiet time before a cursor/selection change is sent (default 50).
---@field root_markers? string[] Files/directories that mark a workspace root, tried in order.
---@field root_dir? fun(bufnr: integer): string? Decides the workspace root of a buffer (replaces root_markers).
---@field session_id? string The agent session the user commands show (default "default").
---@field memory_list? "quickfix"|"select" How :ContextCompanionMemory lists the files.
---@field timeout_ms? integer How long the synchronous Lua API waits for the server (default 5000).
---@field capabilities? table Merged into the client capabilities.
---@field connect? {host?: string, port?: integer, token?: string} Attach to a running `context-companion serve --tcp` instead of starting one; port and token default to the discovery file whose workspace folders hold the root.

---@return context_companion.Options
function M.defaults()
  return {
    cmd = nil,
    settings = {},
    notify_level = vim.log.levels.INFO,
    debounce_ms = 50,
    root_markers = nil, -- computed: .git, .context-companion.toml, then the memory file names
    root_dir = nil,
    session_id = 'default',
    memory_list = 'quickfix',
    timeout_ms = 5000,
    capabilities = nil,
  }
end

local LEVEL_NAMES = {
  trace = vim.log.levels.TRACE,
  debug = vim.log.levels.DEBUG,
  info = vim.log.levels.INFO,
  warn = vim.log.levels.WARN,
  warning = vim.log.levels.WARN,
  error = vim.log.levels.ERROR,
}

local function is_list_of_strings(value)
  if type(value) ~= 'table' or (next(value) ~= nil and not vim.islist(value)) then
    return false
  end
  for _, item in ipairs(value) do
    if type(item) ~= 'string' or item == '' then
      return false
    end
  end
  return true
end

local function describe(value)
  if type(value) == 'string' then
    return ('%q'):format(value)
  end
  return type(value)
end

--- The root markers: `.git` first (a repository is the workspace even when a sub-folder has its own
--- AGENTS.md), then the settings file, then the memory file names (the server's `memory.fileNames`
--- when given, else `MEMORY_FILES`).
---@param settings table
---@return string[]
function M.default_root_markers(settings)
  local names = vim.tbl_get(settings or {}, 'memory', 'fileNames')
    or vim.tbl_get(settings or {}, 'memory', 'file_names')
  if not is_list_of_strings(names) or #names == 0 then
    names = M.MEMORY_FILES
  end
  local markers = { '.git', '.context-companion.toml' }
  for _, name in ipairs(names) do
    if not vim.tbl_contains(markers, name) then
      table.insert(markers, name)
    end
  end
  return markers
end

--- Normalise a notify level; returns (level|false, nil) or (nil, reason).
---@return integer|false|nil, string?
function M.notify_level(value)
  if value == false or value == nil then
    return false
  end
  if type(value) == 'string' then
    local lower = value:lower()
    if lower == 'off' or lower == 'none' then
      return false
    end
    local level = LEVEL_NAMES[lower]
    if level then
      return level
    end
    return nil, ('expected a vim.log.levels value, one of trace/debug/info/warn/error, or false/"off"; got %q'):format(value)
  end
  if type(value) == 'number' then
    for _, level in pairs(vim.log.levels) do
      if level == value then
        return value
      end
    end
    return nil, ('%d is not a vim.log.levels value'):format(value)
  end
  return nil, ('expected a vim.log.levels value, a level name or false; got %s'):format(describe(value))
end

--- Merge user options over the defaults and validate them.
---@param user table?
---@return context_companion.Options? options, string? error
function M.resolve(user)
  if user ~= nil and type(user) ~= 'table' then
    return nil, ('setup() takes a table of options, got %s'):format(describe(user))
  end
  user = user or {}
  local opts = M.defaults()
  for key, value in pairs(user) do
    if type(key) ~= 'string' or opts[key] == nil and not vim.tbl_contains({ 'cmd', 'root_markers', 'root_dir', 'capabilities', 'connect' }, key) then
      return nil, ('unknown option %s (known: cmd, settings, notify_level, debounce_ms, root_markers, root_dir, session_id, memory_list, timeout_ms, capabilities, connect)'):format(describe(key))
    end
    opts[key] = value
  end

  local cmd = opts.cmd
  if cmd ~= nil and type(cmd) ~= 'function' and not (is_list_of_strings(cmd) and #cmd > 0) then
    return nil, ('cmd: expected a non-empty list of strings (e.g. {"python3", "-m", "context_companion", "serve"}) or a function, got %s'):format(describe(cmd))
  end
  if type(opts.settings) ~= 'table' then
    return nil, ('settings: expected a table of server settings, got %s'):format(describe(opts.settings))
  end
  if next(opts.settings) ~= nil and vim.islist(opts.settings) then
    return nil, 'settings: expected a table with named settings (e.g. {context = {maxOpenFiles = 5}}), got a list'
  end
  local level, why = M.notify_level(opts.notify_level)
  if level == nil then
    return nil, 'notify_level: ' .. why
  end
  opts.notify_level = level
  if type(opts.debounce_ms) ~= 'number' or opts.debounce_ms < 0 or opts.debounce_ms ~= math.floor(opts.debounce_ms) then
    return nil, ('debounce_ms: expected a whole number of milliseconds >= 0, got %s'):format(
      type(opts.debounce_ms) == 'number' and tostring(opts.debounce_ms) or describe(opts.debounce_ms)
    )
  end
  if opts.root_markers ~= nil and not (is_list_of_strings(opts.root_markers) and #opts.root_markers > 0) then
    return nil, ('root_markers: expected a non-empty list of file names, got %s'):format(describe(opts.root_markers))
  end
  opts.root_markers = opts.root_markers or M.default_root_markers(opts.settings)
  if opts.root_dir ~= nil and type(opts.root_dir) ~= 'function' then
    return nil, ('root_dir: expected a function(bufnr) returning a directory or nil, got %s'):format(describe(opts.root_dir))
  end
  if type(opts.session_id) ~= 'string' or opts.session_id == '' then
    return nil, ('session_id: expected a non-empty string, got %s'):format(describe(opts.session_id))
  end
  if opts.memory_list ~= 'quickfix' and opts.memory_list ~= 'select' then
    return nil, ('memory_list: expected "quickfix" or "select", got %s'):format(describe(opts.memory_list))
  end
  if type(opts.timeout_ms) ~= 'number' or opts.timeout_ms <= 0 then
    return nil, ('timeout_ms: expected a number of milliseconds > 0, got %s'):format(describe(opts.timeout_ms))
  end
  if opts.capabilities ~= nil and type(opts.capabilities) ~= 'table' then
    return nil, ('capabilities: expected a table, got %s'):format(describe(opts.capabilities))
  end
  local connect = opts.connect
  if connect ~= nil then
    if type(connect) ~= 'table' or vim.islist(connect) and next(connect) ~= nil then
      return nil, ('connect: expected a table {host?, port?, token?}, got %s'):format(describe(connect))
    end
    for key in pairs(connect) do
      if not vim.tbl_contains({ 'host', 'port', 'token' }, key) then
        return nil, ('connect: unknown key %s (known: host, port, token)'):format(describe(key))
      end
    end
    if connect.port ~= nil and (type(connect.port) ~= 'number' or connect.port < 0 or connect.port > 65535 or connect.port ~= math.floor(connect.port)) then
      return nil, ('connect.port: expected a port number, got %s'):format(describe(connect.port))
    end
    for _, key in ipairs({ 'host', 'token' }) do
      if connect[key] ~= nil and (type(connect[key]) ~= 'string' or connect[key] == '') then
        return nil, ('connect.%s: expected a non-empty string, got %s'):format(key, describe(connect[key]))
      end
    end
  end
  return opts
end

return M
