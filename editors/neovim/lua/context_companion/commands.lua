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

--- :ContextCompanionMemory: every memory and rule file, whether it is included and why.
--- Agents :ContextCompanionExplain knows (the server's explainMemory ids).
M.AGENTS = {
  'claude-code', 'codex', 'gemini-cli', 'cursor', 'copilot', 'windsurf', 'cline', 'continue', 'kiro', 'zed', 'vscode',
  'copilot-cli', 'opencode', 'qwen-code', 'context-companion',
}
-- Short names users type for the agents whose ids are longer than their command (as the CLI takes them).
M.AGENT_ALIASES = { claude = 'claude-code', gemini = 'gemini-cli', qwen = 'qwen-code' }

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

--- :ContextCompanionExplain {agent}: which files that agent would load, and why, in a markdown view.
---@param agent string
---@param smods table?
function M.explain(agent, smods)
  agent = vim.trim(agent or '')
  agent = M.AGENT_ALIASES[agent:lower()] or agent
  if not vim.tbl_contains(M.AGENTS, agent) then
    local known = table.concat(M.AGENTS, ', ') .. ' (claude, gemini and qwen stand for claude-code, gemini-cli and qwen-code)'
    return lsp.message(('unknown agent %q; known agents: %s'):format(agent, known), ERROR)
  end
  local args = { agent = agent }
  local file = vim.api.nvim_buf_get_name(0)
  if file ~= '' and vim.bo.buftype == '' then
    args.activeFile = vim.uri_from_fname(file)
  end
  lsp.execute('explainMemory', args, {}, function(err, result, client)
    if err then
      return failed('explaining memory', err)
    end
    views.show('explain', agent, client.id, M.format_explanation(type(result) == 'table' and result or {}), smods, {})
    lsp.message(('%s would load %s'):format(tostring(result.name or agent), plural(#(result.files or {}), 'file')))
  end)
end

--- Agents :ContextCompanionSetup sets up hooks for (`context-companion setup --agent`).
M.HOOK_AGENTS = { 'claude-code', 'gemini-cli', 'codex', 'copilot-cli', 'opencode', 'qwen-code' }

--- :ContextCompanionSetup {agent}: write the agent's hooks (`context-companion setup`) for the
--- workspace of the current buffer (else the current directory), and tell what setup said.
---@param agent string
function M.setup_hooks(agent)
  agent = vim.trim(agent or '')
  if not vim.tbl_contains(M.HOOK_AGENTS, agent) then
    return lsp.message(('unknown agent %q; agents with hooks: %s'):format(agent, table.concat(M.HOOK_AGENTS, ', ')), ERROR)
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
