-- Gemini CLI's IDE companion, Neovim side: the terminal environment (so `:terminal gemini` finds the
-- server), the diff view for `contextCompanion/showDiff`, and the status line.
local M = {}

M.STARTED = 'contextCompanion/companionStarted'
M.SHOW_DIFF = 'contextCompanion/showDiff'
M.CLOSE_DIFF = 'contextCompanion/closeDiff'
M.STATUS = 'contextCompanion.companionStatus'

---@type table<string, table<string, string>> integration key (`geminiCli`, `claudeCode`) → the variables it set
M.envs = {}

---@class context_companion.Diff
---@field uri string
---@field path string
---@field tab integer
---@field proposed integer the buffer holding the proposal (editable)
---@field original integer
---@field finish fun(outcome: string, text: string?)
---@field eol boolean

---@type table<string, context_companion.Diff> uri → open diff
M.diffs = {}

-- ------------------------------------------------------------------ environment

--- The integrations whose terminal variables the plugin puts into vim.env, and the only variable
--- names each may set (a server cannot change PATH or anything else in terminals).
M.INTEGRATIONS = { 'geminiCli', 'claudeCode' }
M.VARIABLES = {
  geminiCli = function(name)
    return name:match('^GEMINI_CLI_[A-Z_]+$') ~= nil
  end,
  claudeCode = function(name)
    return name == 'CLAUDE_CODE_SSE_PORT' or name == 'ENABLE_IDE_INTEGRATION'
  end,
}

local function apply_env(key, started)
  for name in pairs(M.envs[key] or {}) do
    vim.env[name] = nil
  end
  M.envs[key] = nil
  if type(started) ~= 'table' then
    return
  end
  local env = {}
  for name, value in pairs(type(started.env) == 'table' and started.env or {}) do
    if type(name) == 'string' and M.VARIABLES[key](name) and (type(value) == 'string' or type(value) == 'number') then
      env[name] = tostring(value)
      vim.env[name] = env[name]
    end
  end
  M.envs[key] = env
end

--- `contextCompanion/companionStarted`: put the variables into vim.env (children of :terminal
--- inherit them). Each integration (Gemini CLI: `geminiCli`, Claude Code: `claudeCode`) sends its own
--- key; a key that is absent leaves that integration's variables alone, `null` takes them away.
function M.on_started(_, params)
  if type(params) ~= 'table' then
    return
  end
  for _, key in ipairs(M.INTEGRATIONS) do
    if params[key] ~= nil then
      apply_env(key, params[key])
    end
  end
end

-- ------------------------------------------------------------------ diffs

local function buffer_text(bufnr, eol)
  local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
  if eol then
    text = text .. '\n'
  end
  return text
end

local function current_text(path)
  local bufnr = vim.fn.bufnr(path)
  if bufnr ~= -1 and vim.api.nvim_buf_is_loaded(bufnr) then
    return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  end
  if vim.fn.filereadable(path) == 1 then
    return vim.fn.readfile(path)
  end
  return {}
end

local function scratch(name, lines, modifiable, filetype)
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].bufhidden = 'wipe'
  vim.bo[bufnr].modifiable = modifiable
  if filetype and filetype ~= '' then
    vim.bo[bufnr].filetype = filetype
  end
  pcall(vim.api.nvim_buf_set_name, bufnr, name)
  return bufnr
end

--- The diff of the current buffer or tab, else the only one open.
---@return context_companion.Diff?
function M.current_diff()
  local bufnr = vim.api.nvim_get_current_buf()
  local tab = vim.api.nvim_get_current_tabpage()
  local only, count = nil, 0
  for _, d in pairs(M.diffs) do
    if d.proposed == bufnr or d.original == bufnr or d.tab == tab then
      return d
    end
    only, count = d, count + 1
  end
  return count == 1 and only or nil
end

local function close_view(d)
  M.diffs[d.uri] = nil
  if vim.api.nvim_tabpage_is_valid(d.tab) and #vim.api.nvim_list_tabpages() > 1 then
    vim.cmd.tabclose(vim.api.nvim_tabpage_get_number(d.tab))
  end
  for _, b in ipairs({ d.proposed, d.original }) do
    if vim.api.nvim_buf_is_valid(b) then
      pcall(vim.api.nvim_buf_delete, b, { force = true })
    end
  end
end

---@param d context_companion.Diff
---@param outcome 'accepted'|'rejected'|'closed'
local function decide(d, outcome)
  if M.diffs[d.uri] ~= d then
    return
  end
  local text = vim.api.nvim_buf_is_valid(d.proposed) and buffer_text(d.proposed, d.eol) or nil
  M.diffs[d.uri] = nil
  close_view(d)
  d.finish(outcome, outcome ~= 'rejected' and text or nil)
end

--- Decide the diff shown in the current tab ('accepted' or 'rejected').
local function decide_current(outcome)
  local d = M.current_diff()
  if not d then
    vim.notify('Context Companion: no proposed change (diff) is open here', vim.log.levels.WARN)
    return
  end
  decide(d, outcome)
end

function M.accept()
  decide_current('accepted')
end

function M.reject()
  decide_current('rejected')
end

--- Show the proposal beside the file in a new tab; `finish` is called once with the decision.
function M.open(params, finish)
  local uri = params.uri
  local path = vim.uri_to_fname(uri)
  local old = M.diffs[uri]
  if old then
    decide(old, 'closed')
  end
  local new_text = params.newText or ''
  local eol = new_text:sub(-1) == '\n'
  local lines = vim.split(eol and new_text:sub(1, -2) or new_text, '\n', { plain = true })
  local filetype = vim.filetype.match({ filename = path }) or ''
  vim.cmd.tabnew()
  local tab = vim.api.nvim_get_current_tabpage()
  local original = scratch('gemini-diff://original/' .. path, current_text(path), false, filetype)
  vim.api.nvim_win_set_buf(0, original)
  vim.cmd.diffthis()
  vim.cmd.vsplit()
  local proposed = scratch('gemini-diff://proposed/' .. path, lines, true, filetype)
  vim.api.nvim_win_set_buf(0, proposed)
  vim.cmd.diffthis()
  ---@type context_companion.Diff
  local d = { uri = uri, path = path, tab = tab, proposed = proposed, original = original, finish = finish, eol = eol }
  M.diffs[uri] = d
  for _, b in ipairs({ proposed, original }) do
    local map = function(lhs, fn, desc)
      vim.keymap.set('n', lhs, fn, { buffer = b, desc = desc, nowait = true })
    end
    map('<LocalLeader>a', M.accept, 'Context Companion: accept the Gemini CLI change')
    map('<LocalLeader>r', M.reject, 'Context Companion: reject the Gemini CLI change')
    vim.api.nvim_create_autocmd('BufWipeout', {
      buffer = b,
      once = true,
      callback = function()
        vim.schedule(function()
          decide(d, 'closed')
        end)
      end,
    })
  end
  vim.b[proposed].context_companion_diff = uri
  vim.notify(
    ('A proposed change to %s (%s): edit it if you like, then :ContextCompanionDiffAccept or :ContextCompanionDiffReject'):format(
      vim.fn.fnamemodify(path, ':~:.'),
      params.title or 'from the agent'
    ),
    vim.log.levels.INFO
  )
end

--- Request handler for `contextCompanion/showDiff`. Neovim runs server requests in a coroutine:
--- the answer goes back when the user decides.
function M.on_show_diff(_, params)
  local co = coroutine.running()
  local answered = false
  vim.schedule(function()
    M.open(params, function(outcome, text)
      if answered then
        return
      end
      answered = true
      local result = { outcome = outcome }
      if text ~= nil then
        result.text = text
      end
      vim.schedule(function()
        coroutine.resume(co, result)
      end)
    end)
  end)
  return coroutine.yield()
end

--- Request handler for `contextCompanion/closeDiff`.
function M.on_close_diff(_, params)
  local d = params and M.diffs[params.uri]
  if d then
    vim.schedule(function()
      decide(d, 'closed')
    end)
  end
  return vim.NIL
end

-- ------------------------------------------------------------------ status

---@param status table the `geminiCli` part of companionStatus
---@return string
function M.describe(status)
  if type(status) ~= 'table' or not status.running then
    return 'Gemini CLI companion: not running (companion.geminiCli.enabled is off, or it could not start)'
  end
  if (status.connectedClients or 0) > 0 then
    return ('Gemini CLI connected (port %d, %d client%s)'):format(
      status.port,
      status.connectedClients,
      status.connectedClients == 1 and '' or 's'
    )
  end
  return ('Gemini CLI companion listening on port %d; no CLI connected (run :terminal gemini in the workspace)'):format(
    status.port
  )
end

function M.handlers()
  return {
    [M.STARTED] = M.on_started,
    [M.SHOW_DIFF] = M.on_show_diff,
    [M.CLOSE_DIFF] = M.on_close_diff,
  }
end

return M
