--- :ContextCompanionInstall: the server, installed from the plugin's own checkout into a virtual
--- environment in Neovim's data folder (`stdpath('data')/context-companion/venv`), so no clone, PATH
--- or pip command of the user's is needed. Usable as a plugin manager's build step
--- (lazy.nvim: `build = ':ContextCompanionInstall'`): it runs to the end before it returns.
---
--- What it installs, in order: the repository the plugin lives in (`editors/neovim` of the
--- context-companion repository, whose root holds pyproject.toml), else the newest
--- `context_companion-*.whl` in the plugin's folder. The Python is the command's argument, else
--- `python3` on PATH; it must be 3.10 or newer. Dependencies come from the user's package index
--- (pip's own configuration).

local M = {}

M.MIN_PYTHON = { 3, 10 }
M.COMMAND = 'ContextCompanionInstall'
M.TIMEOUT_MS = 15 * 60 * 1000 -- a slow index; a hang ends here, with a message

--- `<plugin>/lua/context_companion/install.lua` → `<plugin>`.
local function plugin_root()
  local source = debug.getinfo(1, 'S').source:gsub('^@', '')
  return vim.fs.normalize(vim.fn.fnamemodify(source, ':p:h:h:h'))
end

---@return string
function M.dir()
  return vim.fs.normalize(vim.fn.stdpath('data') .. '/context-companion')
end

--- The working folder of every process the plugin starts (the server, `setup`, the Python probes, venv and
--- pip): a folder of its own that holds nothing, made owner-only. Never the project (Neovim's cwd):
--- `python -m …` and `python -c …` put the working folder first on `sys.path`, so a repository's own
--- `context_companion/` or `pydantic/` would run as the user. The project goes in `initialize`
--- (workspaceFolders) or as `--workspace`.
---@return string
function M.launch_dir()
  local dir = M.dir() .. '/launch'
  if vim.fn.isdirectory(dir) == 0 then
    vim.fn.mkdir(dir, 'p', 448) -- 0700
  end
  return dir
end

---@return string
function M.venv()
  return M.dir() .. '/venv'
end

---@return string
function M.log_file()
  return M.dir() .. '/install.log'
end

--- The installed server's command, when `:ContextCompanionInstall` made one.
---@return string?
function M.executable()
  local exe = M.venv() .. '/bin/context-companion'
  if vim.fn.executable(exe) == 1 then
    return exe
  end
  return nil
end

local function read_file(path)
  local fh = io.open(path, 'r')
  if not fh then
    return nil
  end
  local text = fh:read('*a')
  fh:close()
  return text
end

--- What to install: `{kind = 'project', path = <repo root>, version = 'X.Y.Z'}` or
--- `{kind = 'wheel', path = <file>, version = 'X.Y.Z'}`; nil and why when the plugin has neither.
---@return {kind: string, path: string, version: string?}?, string?
function M.source()
  local plugin = plugin_root()
  local repo = vim.fs.normalize(vim.fn.fnamemodify(plugin, ':h:h'))
  local pyproject = read_file(repo .. '/pyproject.toml')
  if pyproject and pyproject:find('name = "context-companion"', 1, true) then
    local init = read_file(repo .. '/server/context_companion/__init__.py') or ''
    return { kind = 'project', path = repo, version = init:match('__version__ = "([^"]+)"') }
  end
  local wheels = vim.fn.glob(plugin .. '/context_companion-*.whl', false, true)
  table.sort(wheels, function(a, b)
    local va, vb = a:match('context_companion%-([^-]+)%-') or '0', b:match('context_companion%-([^-]+)%-') or '0'
    local ok, less = pcall(vim.version.lt, va, vb)
    if ok then
      return less
    end
    return va < vb
  end)
  local wheel = wheels[#wheels]
  if wheel then
    return { kind = 'wheel', path = wheel, version = wheel:match('context_companion%-([^-]+)%-') }
  end
  return nil,
    ('the plugin folder %s is not inside a context-companion checkout (no pyproject.toml at %s) and holds no context_companion-*.whl'):format(
      plugin,
      repo
    )
end

--- The Python to build the environment with, and its version; nil and a message that says what
--- is missing and what to do.
---@param python string? the command's argument
---@return string?, string?
function M.find_python(python)
  local name = python and python ~= '' and python or 'python3'
  local exe = vim.fn.exepath(name)
  if exe == '' then
    if python and python ~= '' then
      return nil, ('%s is not an executable Python'):format(python)
    end
    return nil,
      ('no python3 on PATH: Context Companion needs Python %d.%d or newer. Install it (e.g. `sudo apt install python3 python3-venv`), then run :%s, or :%s /path/to/python3'):format(
        M.MIN_PYTHON[1],
        M.MIN_PYTHON[2],
        M.COMMAND,
        M.COMMAND
      )
  end
  local ok, probe = pcall(function()
    return vim.system({ exe, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])' }, { text = true, cwd = M.launch_dir() })
      :wait(30000)
  end)
  local version = ok and probe.code == 0 and vim.trim(probe.stdout or '') or ''
  local major, minor = version:match('^(%d+)%.(%d+)$')
  if not major then
    return nil, ('%s did not answer as a Python does (%s)'):format(exe, ok and vim.trim(probe.stderr or '') or tostring(probe))
  end
  major, minor = tonumber(major), tonumber(minor)
  if major < M.MIN_PYTHON[1] or (major == M.MIN_PYTHON[1] and minor < M.MIN_PYTHON[2]) then
    return nil,
      ('%s is Python %s; Context Companion needs %d.%d or newer: install one and run :%s /path/to/python3.%d'):format(
        exe,
        version,
        M.MIN_PYTHON[1],
        M.MIN_PYTHON[2],
        M.COMMAND,
        M.MIN_PYTHON[2]
      )
  end
  return exe, version
end

--- The version the installed server reports, or nil.
---@return string?
function M.installed_version()
  local python = M.venv() .. '/bin/python'
  if vim.fn.executable(python) == 0 then
    return nil
  end
  local ok, result = pcall(function()
    return vim.system(
      { python, '-c', 'import context_companion, sys; sys.stdout.write(context_companion.__version__)' },
      { text = true, cwd = M.launch_dir() }
    ):wait(30000)
  end)
  if ok and result.code == 0 and result.stdout ~= '' then
    return result.stdout
  end
  return nil
end

local function say(msg, level)
  vim.notify('Context Companion: ' .. msg, level or vim.log.levels.INFO, { title = 'Context Companion' })
  pcall(vim.cmd.redraw)
end

local function log_step(log, cmd, result)
  if log then
    log:write(('$ %s\n(exit %s)\n%s%s\n'):format(table.concat(cmd, ' '), tostring(result.code), result.stdout or '', result.stderr or ''))
    log:flush()
  end
end

--- Run one step; nil and a message with the last lines of its output when it fails.
-- What pip says when it cannot reach the package index (or finds nothing there).
local INDEX_UNREACHABLE = {
  'NewConnectionError',
  'Max retries exceeded',
  'Temporary failure in name resolution',
  'Could not find a version that satisfies the requirement',
  'No matching distribution found',
}

local function step(cmd, log, what, timeout)
  local ok, result = pcall(function()
    return vim.system(cmd, {
      text = true,
      cwd = M.launch_dir(),
      env = { PIP_DISABLE_PIP_VERSION_CHECK = '1', PYTHONNOUSERSITE = '1' },
    }):wait(timeout)
  end)
  if not ok then
    return nil, ('%s: %s'):format(what, tostring(result))
  end
  log_step(log, cmd, result)
  if result.code ~= 0 then
    local said = vim.trim(result.stderr or '') ~= '' and result.stderr or result.stdout or ''
    local lines = vim.split(vim.trim(said), '\n', { trimempty = true })
    local last = {}
    for _, line in ipairs(lines) do -- pip's own "ERROR: ..." lines say it best
      local err = vim.trim(line):match('^ERROR: (.*)')
      if err and not vim.tbl_contains(last, err) then
        table.insert(last, err)
      end
    end
    if #last == 0 then
      for i = math.max(1, #lines - 2), #lines do
        table.insert(last, vim.trim(lines[i]))
      end
    end
    local why = table.concat(last, ' | ')
    if result.code == 124 then -- vim.system's code for a process stopped at the timeout
      why = ('it took longer than %d s and was stopped'):format(timeout / 1000)
    end
    local all = (result.stderr or '') .. (result.stdout or '')
    for _, sign in ipairs(INDEX_UNREACHABLE) do
      if all:find(sign, 1, true) then
        why = 'the package index could not be reached (check the network, or where pip looks: `python3 -m pip config list`): '
          .. why
        break
      end
    end
    return nil, ('%s failed (exit %d): %s (all of it: %s)'):format(what, result.code, why, M.log_file())
  end
  return result
end

--- Install (or update) the server. Synchronous: it returns when pip is done.
---@param opts? {python?: string, fresh?: boolean}
---@return boolean ok, string message
function M.run(opts)
  opts = opts or {}
  local source, why = M.source()
  if not source then
    return false, why
  end
  local python, version = M.find_python(opts.python)
  if not python then
    return false, version
  end
  local venv = M.venv()
  vim.fn.mkdir(M.dir(), 'p')
  local log = io.open(M.log_file(), 'w')
  local function finish(ok, msg)
    if log then
      log:write(msg, '\n')
      log:close()
    end
    return ok, msg
  end
  local venv_python = venv .. '/bin/python'
  local usable = vim.fn.executable(venv_python) == 1
    and step({ venv_python, '-c', 'import sys; assert sys.version_info >= (3, 10)' }, nil, 'probe', 30000) ~= nil
  if opts.fresh or not usable then
    if vim.fn.isdirectory(venv) == 1 then
      vim.fn.delete(venv, 'rf')
    end
    say(('creating %s with %s (Python %s)'):format(venv, python, version))
    local _, err = step({ python, '-m', 'venv', venv }, log, python .. ' -m venv', 120000)
    if err then
      return finish(false, err .. ' (Debian and Ubuntu: sudo apt install python3-venv)')
    end
  end
  say(('installing the server from %s into %s (pip; dependencies from your package index)'):format(source.path, venv))
  local _, err = step(
    { venv_python, '-m', 'pip', 'install', '--upgrade', source.path },
    log,
    'pip install ' .. source.path,
    M.TIMEOUT_MS
  )
  if err then
    return finish(false, err)
  end
  local installed = M.installed_version()
  if not installed or not M.executable() then
    return finish(false, ('pip finished but %s/bin/context-companion does not run; see %s'):format(venv, M.log_file()))
  end
  return finish(true, ('context-companion %s is installed in %s'):format(installed, venv))
end

--- The user command: install, say how it went, start the server for the open buffers.
---@param args {args: string, bang: boolean}
function M.command(args)
  local python = vim.trim(args.args or '')
  -- A Python named here is a choice: the environment is made anew with it, as with [!].
  local ok, msg = M.run({ python = python, fresh = args.bang or python ~= '' })
  if not ok then
    say('the install failed: ' .. msg, vim.log.levels.ERROR)
    return
  end
  say(msg)
  local cc = package.loaded['context_companion']
  if cc and cc._did_setup then
    local lsp = require('context_companion.lsp')
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) then
        pcall(lsp.start, bufnr)
      end
    end
  end
end

return M
