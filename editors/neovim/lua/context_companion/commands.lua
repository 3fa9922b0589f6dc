--- The user commands (:ContextCompanion*), defined in plugin/context_companion.lua.

local lsp = require('context_companion.lsp')
local views = require('context_companion.views')

local M = {}

--- The session :ContextCompanionTurnContext uses, so that looking at the context never takes a
--- delta away from an agent's own session. It is ended right after.
M.PREVIEW_SESSION = 'neovim-preview'

local ERROR = vim.log.levels.ERROR

---@param what string
---@param err table
local function failed(what, err)
  lsp.message(('%s failed: %s'):format(what, tostring(err and err.message or err)), ERROR)
end

--- "2412" or "~2412" when the count is an estimate.
---@param tokens any
local function token_text(tokens)
  if type(tokens) ~= 'table' or type(tokens.total) ~= 'number' then
    return '?'
  end
  return (tokens.estimated and '~' or '') .. tostring(tokens.total)
end

local function plural(n, word)
  return ('%d %s%s'):format(n, word, n == 1 and '' or 's')
end

---@param files any
local function included_count(files)
  local n = 0
  for _, file in ipairs(type(files) == 'table' and files or {}) do
    if type(file) ~= 'table' or file.included ~= false then
      n = n + 1
    end
  end
  return n
end

--- :ContextCompanionRefresh: re-read memory and rule files, rebuild the instructions.
function M.refresh()
  lsp.execute('refreshMemory', {}, {}, function(err, result)
    if err then
      return failed('refresh', err)
    end
    result = type(result) == 'table' and result or {}
    lsp.message(('%s · %s tokens'):format(plural(included_count(result.memoryFiles), 'memory file'), token_text(result.tokens)))
  end)
end

--- :ContextCompanionInstruction: the system instruction in a read-only markdown buffer.
---@param smods table?
function M.instruction(smods)
  local session = lsp.options().session_id
  require('context_companion')._instruction({ sessionId = session }, function(err, result, client)
    if err then
      return failed('getting the system instruction', err)
    end
    views.show('instruction', session, client.id, result.text, smods, { etag = result.etag, tokens = result.tokens })
    lsp.message(
      ('system instruction · %s tokens · %s'):format(
        token_text(result.tokens),
        plural(included_count(result.memoryFiles), 'memory file')
      )
    )
  end)
end

--- :ContextCompanionTurnContext: the full editor context an agent would be given now.
---@param smods table?
function M.turn_context(smods)
  local args = { sessionId = M.PREVIEW_SESSION, forceFull = true }
  lsp.execute('getTurnContext', args, {}, function(err, result, client)
    if client then
      lsp.execute('endSession', { sessionId = M.PREVIEW_SESSION }, { client_id = client.id }, function() end)
    end
    if err then
      return failed('getting the turn context', err)
    end
    if type(result) ~= 'table' or type(result.text) ~= 'string' then
      return lsp.message('there is no editor context to give (is context.enabled off?)')
    end
    views.show('turn-context', M.PREVIEW_SESSION, client.id, views.turn_text(result), smods, { kind = result.kind })
  end)
end

--- A memory file's display path (relative to a workspace folder, or `~/…`) as an absolute path.
---@param path string
---@param client vim.lsp.Client
local function absolute(path, client)
  if path:sub(1, 1) == '~' then
    return vim.fs.normalize(path)
  end
  if path:sub(1, 1) == '/' or path:match('^%a:[/\\]') then
    return path
  end
  local first
  for _, folder in ipairs(client.workspace_folders or {}) do
    local candidate = vim.fs.joinpath(vim.uri_to_fname(folder.uri), path)
    first = first or candidate
    if vim.uv.fs_stat(candidate) then
      return candidate
    end
  end
  return first or vim.fs.joinpath(client.root_dir or vim.fn.getcwd(), path)
end

---@param file table
local function describe(file)
  local reason = tostring(file.reason or '')
  local state
  if file.included == false then
    state = reason:find('^not included') and reason or ('not included: ' .. reason)
  else
    state = reason ~= '' and ('included: ' .. reason) or 'included'
  end
  if file.comesWithTurn == true then
    state = state .. ' (comes with the turn)'
  end
  return ('%s · %s tokens · %s'):format(tostring(file.tier or '?'), tostring(file.tokens or '?'), state)
end

-- ------------------------------------------------------------------ the server's agents

--- The agents of each running server (`contextCompanion.listAgents`), by client id: asked once per server start
--- (a restarted server is a new client). The plugin names no agent itself: a new agent comes with the server.
local agent_lists = {}

---@param result any
---@return table[]
local function agents_of(result)
  local list = type(result) == 'table' and result.agents or nil
  if type(list) ~= 'table' then
    return {}
  end
  return vim.tbl_filter(function(a)
    return type(a) == 'table' and type(a.id) == 'string'
  end, list)
end

--- The running server's agents, then `cb(agents)`; `cb(nil, err)` when no server runs for this buffer.
---@param cb fun(agents: table[]?, err: table?)
function M.with_agents(cb)
  local client = lsp.client_for()
  if client and agent_lists[client.id] then
    return cb(agent_lists[client.id])
  end
  lsp.execute('listAgents', {}, {}, function(err, result, answered)
    if err then
      return cb(nil, err)
    end
    local agents = agents_of(result)
    if answered then
      agent_lists[answered.id] = agents
    end
    cb(agents)
  end)
end

--- The running server's agents, waiting for its answer (completion); nil when no server runs.
---@return table[]?
function M.agents_now()
  local client = lsp.client_for()
  if not client then
    return nil
  end
  if not agent_lists[client.id] then
    local result, err = lsp.execute('listAgents', {}, { client_id = client.id })
    if err then
      return nil
    end
    agent_lists[client.id] = agents_of(result)
  end
  return agent_lists[client.id]
end

--- Which agents a command takes: explain the ones `explainMemory` knows, setup the ones with hooks.
local FOR = {
  explain = function(a)
    return a.explain == true
  end,
  setup = function(a)
    return a.hooks == true and type(a.setup) == 'table'
  end,
}

---@param a table
---@return string[]
local function short_names(a)
  return vim.tbl_filter(function(s)
    return type(s) == 'string' and s ~= ''
  end, type(a.shortNames) == 'table' and a.shortNames or {})
end

--- The names `command` takes for the listed agents: each id, then its short names.
---@param agents table[]
---@param command "explain"|"setup"
---@return string[]
function M.agent_names(agents, command)
  local names = {}
  for _, a in ipairs(vim.tbl_filter(FOR[command], agents)) do
    local these = short_names(a)
    table.insert(these, 1, a.id)
    for _, name in ipairs(these) do
      if not vim.tbl_contains(names, name) then
        table.insert(names, name)
      end
    end
  end
  return names
end

--- The agent `name` stands for (an id, else a short name; any case), or nil.
---@param agents table[]
---@param command "explain"|"setup"
---@param name string
---@return table?
function M.find_agent(agents, command, name)
  local key = vim.trim(name or ''):lower()
  local usable = vim.tbl_filter(FOR[command], agents)
  for _, a in ipairs(usable) do
    if a.id == key then
      return a
    end
  end
  for _, a in ipairs(usable) do
    if vim.tbl_contains(short_names(a), key) then
      return a
    end
  end
  return nil
end

--- "<id> (or <short name>), <id>, …": the ids `command` takes with their short names, for messages.
---@param agents table[]
---@param command "explain"|"setup"
---@return string
function M.known_agents(agents, command)
  return table.concat(
    vim.tbl_map(function(a)
      local shorts = short_names(a)
      return #shorts > 0 and ('%s (or %s)'):format(a.id, table.concat(shorts, ', ')) or a.id
    end, vim.tbl_filter(FOR[command], agents)),
    ', '
  )
end

--- Completion of `lead` for :ContextCompanionExplain and :ContextCompanionSetup: the running server's names
--- (none while no server runs for this buffer).
---@param command "explain"|"setup"
---@param lead string
---@return string[]
function M.complete(command, lead)
  local agents = M.agents_now()
  if not agents then
    return {}
  end
  lead = (lead or ''):lower()
  return vim.tbl_filter(function(name)
    return name:find(lead, 1, true) == 1
  end, M.agent_names(agents, command))
end

--- The Markdown of an explainMemory answer.
---@param r table
---@return string
function M.format_explanation(r)
  local name = tostring(r.name or r.agent or '?')
  local lines = { ('# What %s would load'):format(name), '' }
  if type(r.docs) == 'table' and #r.docs > 0 then
    vim.list_extend(lines, { 'Rules from: ' .. table.concat(r.docs, ', '), '' })
  end
  local files = type(r.files) == 'table' and r.files or {}
  if #files == 0 then
    vim.list_extend(lines, { ('_%s would load no memory or rule file here._'):format(name), '' })
  end
  for _, f in ipairs(files) do
    table.insert(lines, ('- `%s` (%s, %s tokens): %s'):format(f.path, f.tier or '', tostring(f.tokens or 0), f.why or ''))
  end
  if #files > 0 then
    vim.list_extend(lines, { '', ('%s, %s tokens'):format(plural(#files, 'file'), tostring(r.tokens or 0)), '' })
  end
  local function section(title, items, text)
    if type(items) == 'table' and #items > 0 then
      vim.list_extend(lines, { '## ' .. title, '' })
      for _, item in ipairs(items) do
        table.insert(lines, text(item))
      end
      table.insert(lines, '')
    end
  end
  section('Offered by description only', r.listed, function(f)
    return ('- `%s`: %s'):format(f.path, f.why or '')
  end)
  section('Not loaded', r.notLoaded, function(f)
    return ('- `%s`: %s'):format(f.path, f.reason or '')
  end)
  section(('Loaded by %s, not by Context Companion'):format(name), r.onlyAgent, function(p)
    return ('- `%s`'):format(p)
  end)
  section(('Loaded by Context Companion, not by %s'):format(name), r.onlyContextCompanion, function(p)
    return ('- `%s`'):format(p)
  end)
  return table.concat(lines, '\n')
end

--- :ContextCompanionExplain {agent}: which files that agent would load, and why, in a markdown view. The
--- agents are the running server's (an id or a short name, any case).
---@param agent string
---@param smods table?
function M.explain(agent, smods)
  agent = vim.trim(agent or '')
  M.with_agents(function(agents, list_err)
    if not agents then
      return failed('explaining memory', list_err)
    end
    local found = M.find_agent(agents, 'explain', agent)
    if not found then
      return lsp.message(('unknown agent %q; known agents: %s'):format(agent, M.known_agents(agents, 'explain')), ERROR)
    end
    local args = { agent = found.id }
    local file = vim.api.nvim_buf_get_name(0)
    if file ~= '' and vim.bo.buftype == '' then
      args.activeFile = vim.uri_from_fname(file)
    end
    lsp.execute('explainMemory', args, {}, function(err, result, client)
      if err then
        return failed('explaining memory', err)
      end
      result = type(result) == 'table' and result or {}
      views.show('explain', found.id, client.id, M.format_explanation(result), smods, {})
      lsp.message(('%s would load %s'):format(tostring(result.name or found.name), plural(#(result.files or {}), 'file')))
    end)
  end)
end

--- :ContextCompanionSetup {agent}: write the agent's hooks (`context-companion setup`) for the
--- workspace of the current buffer (else the current directory), and tell what setup said. `setup` knows its
--- agents and names them when it refuses one, so this needs no running server.
---@param agent string
function M.setup_hooks(agent)
  agent = vim.trim(agent or '')
  if agent == '' then
    return lsp.message('usage: :ContextCompanionSetup {agent} (<Tab> completes the agents with hooks)', ERROR)
  end
  local folder = lsp.root_for(0) or vim.fn.getcwd()
  local cmd = lsp.cli_cmd({ 'setup', '--agent', agent, '--workspace', folder })
  -- Run from the plugin's launch folder, never the project (`python -m` imports from its working folder first).
  local ok, err = pcall(vim.system, cmd, { text = true, cwd = require('context_companion.install').launch_dir() }, function(result)
    vim.schedule(function()
      local function lines(text)
        return vim.tbl_filter(function(l)
          return l ~= ''
        end, vim.split(vim.trim(text or ''), '\n', { plain = true }))
      end
      if result.code == 0 then
        lsp.message(table.concat(lines(result.stdout), '\n'))
      else
        local errs = lines(result.stderr)
        local why = (errs[#errs] or ('exit status ' .. result.code)):gsub('^context%-companion: ', '')
        lsp.message(('%s hooks not set up: %s'):format(agent, why), ERROR)
      end
    end)
  end)
  if not ok then
    lsp.message(('cannot run %s: %s'):format(cmd[1], tostring(err)), ERROR)
  end
end

--- :ContextCompanionMemory: every memory and rule file, whether it is included and why.
function M.memory()
  lsp.execute('showMemory', {}, {}, function(err, result, client)
    if err then
      return failed('listing memory files', err)
    end
    local files = type(result) == 'table' and type(result.files) == 'table' and result.files or {}
    if #files == 0 then
      return lsp.message('no memory files found (AGENTS.md, GEMINI.md, CLAUDE.md or rules)')
    end
    if lsp.options().memory_list == 'select' then
      vim.ui.select(files, {
        prompt = 'Context Companion memory files',
        format_item = function(file)
          return ('%s  (%s)'):format(tostring(file.path), describe(file))
        end,
      }, function(file)
        if file then
          vim.cmd.edit(vim.fn.fnameescape(absolute(tostring(file.path), client)))
        end
      end)
      return
    end
    local items = {}
    for _, file in ipairs(files) do
      table.insert(items, { filename = absolute(tostring(file.path), client), lnum = 1, col = 1, text = describe(file) })
    end
    vim.fn.setqflist({}, ' ', { title = 'Context Companion: memory files', items = items })
    vim.cmd('botright copen')
  end)
end

--- :ContextCompanionAddMemory[!] {fact}: remember a fact (global memory; with ! the workspace's).
---@param fact string
---@param workspace boolean
function M.add_memory(fact, workspace)
  fact = vim.trim(fact or '')
  if fact == '' then
    return lsp.message('usage: :ContextCompanionAddMemory[!] {fact}', vim.log.levels.WARN)
  end
  local args = { fact = fact }
  if workspace then
    args.scope = 'workspace'
  end
  lsp.execute('addMemory', args, {}, function(err, result)
    if err then
      return failed('adding the memory', err)
    end
    local path = type(result) == 'table' and result.path or nil
    if type(path) ~= 'string' then
      return lsp.message('the fact was saved')
    end
    lsp.message(('remembered in %s'):format(vim.fn.fnamemodify(path, ':~')))
    -- a buffer showing that file reloads (or warns, when it has unsaved changes)
    local target = vim.fs.normalize(path)
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) and vim.fs.normalize(vim.api.nvim_buf_get_name(bufnr)) == target then
        vim.cmd.checktime(bufnr)
      end
    end
  end)
end

--- :ContextCompanionStatus: is the Gemini CLI companion running, is a CLI connected?
function M.status()
  lsp.execute(require('context_companion.gemini').STATUS, {}, {}, function(err, result)
    if err then
      return failed('status', err)
    end
    lsp.message(require('context_companion.gemini').describe(type(result) == 'table' and result.geminiCli or nil))
  end)
end

return M
