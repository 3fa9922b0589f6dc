--- Context Companion for codecompanion.nvim (checked with codecompanion 19.22.0).
---
--- codecompanion calls its `system_prompt` function only when a chat is created (and on an adapter
--- or model change), so an `AGENTS.md` edit would never reach an open chat. `setup()` therefore also
--- hooks every chat's `on_before_submit` callback, which runs on each submit before the user's message
--- is added, and there
---
---   1. re-reads the instruction (cheap: the plugin asks with `ifNoneMatch`) and replaces the chat's
---      system message, in place, only when its text changed, so an unchanged instruction keeps its
---      bytes;
---   2. adds the turn's editor context (full on a chat's first turn and after codecompanion cleared
---      or compacted it, a delta after, with the memory that applies to the open files) as a hidden
---      user message before the user's own.
---
--- A closed chat ends its session on the server and drops the plugin's cached copy of its instruction.
---
--- It also turns off codecompanion's own rules loader (`rules.opts.chat.enabled = false`), which
--- would send `AGENTS.md` & co. a second time as a user message that goes stale when they change;
--- Context Companion reads those files (and more) itself.
---
--- See :help context-companion-codecompanion and docs/editors/neovim.md.

local cc = require('context_companion')
local lsp = require('context_companion.lsp')

local M = {}

local api = vim.api

--- The Context Companion session of a codecompanion chat: one per chat, so a new chat starts with a
--- full editor context and gets the memory that applies sent again.
---@param chat table codecompanion's chat object
---@return string
function M.session(chat)
  return ('%s-%s'):format(M._prefix or 'codecompanion', tostring(chat.id))
end

--- The buffer the chat was opened from (its workspace's server answers), or nil.
local function source_buf(chat)
  local ctx = chat.buffer_context
  local bufnr = type(ctx) == 'table' and ctx.bufnr or nil
  if type(bufnr) == 'number' and api.nvim_buf_is_valid(bufnr) then
    return bufnr
  end
  return nil
end

local TAG = 'system_prompt_from_config' -- codecompanion's tag for the chat's configured system prompt

--- The chat's system message from its `system_prompt` and its index, or nil.
local function system_message(chat)
  for i, msg in ipairs(chat.messages or {}) do
    if msg.role == 'system' and msg._meta and msg._meta.tag == TAG then
      return msg, i
    end
  end
  return nil
end

local function warn_once(chat, err)
  if chat._context_companion_warned then
    return
  end
  chat._context_companion_warned = true
  lsp.message('codecompanion: ' .. tostring(err and err.message or err), vim.log.levels.WARN)
end

--- What runs before each submit of a chat (see the module comment). Public for tests and for
--- plugins that build their own chats.
---@param chat table codecompanion's chat object
function M.before_submit(chat)
  local session = M.session(chat)
  local bufnr = source_buf(chat)
  if not (chat.opts and chat.opts.ignore_system_prompt) then
    local res, err = cc.system_instruction({ sessionId = session, bufnr = bufnr })
    if res and type(res.text) == 'string' then
      -- none when the user toggled it off (codecompanion's `gs`): leave it off
      local current, index = system_message(chat)
      if current and current.content ~= res.text then
        -- in place: codecompanion would otherwise move it after any other system message
        chat:set_system_prompt(res.text, { visible = false, _meta = { tag = TAG, index = index } })
      end
    elseif err then
      warn_once(chat, err)
    end
  end
  -- after codecompanion cleared or compacted the chat, the earlier context is gone from its history
  local force_full = chat._context_companion_force_full == true
  chat._context_companion_force_full = nil
  local turn, err = cc.turn_context({ sessionId = session, bufnr = bufnr, forceFull = force_full or nil })
  if turn and type(turn.text) == 'string' and turn.text ~= '' then
    chat:add_message({ role = 'user', content = turn.text }, { visible = false })
  elseif err then
    warn_once(chat, err)
  end
end

--- codecompanion's options with Context Companion's parts added: the chat `system_prompt` (the
--- instruction; codecompanion's default when no server runs) and `rules.opts.chat.enabled = false`.
--- It also hooks every chat (a `User CodeCompanionChatCreated` autocommand). Pass your own
--- codecompanion options; the result goes to `require('codecompanion').setup()`.
---@param opts? table codecompanion options
---@param cc_opts? { session_prefix?: string }
---@return table
function M.setup(opts, cc_opts)
  opts = vim.deepcopy(opts or {})
  M._prefix = (cc_opts and cc_opts.session_prefix) or 'codecompanion'
  -- earlier releases kept the chat options under `strategies`; codecompanion would rebuild
  -- `interactions` from them and drop ours
  if type(opts.strategies) == 'table' then
    opts.interactions = vim.tbl_deep_extend('force', opts.interactions or {}, opts.strategies)
    opts.strategies = nil
  end
  opts = vim.tbl_deep_extend('force', opts, {
    interactions = {
      chat = {
        opts = {
          system_prompt = function(ctx)
            local res = cc.system_instruction({ sessionId = M._prefix })
            return res and res.text or ctx.default_system_prompt
          end,
        },
      },
    },
    rules = { opts = { chat = { enabled = false } } },
  })

  local group = api.nvim_create_augroup('context_companion_codecompanion', { clear = true })
  local function chat_of(args)
    local ok, chat = pcall(require('codecompanion').buf_get_chat, args.data and args.data.bufnr)
    return ok and chat or nil
  end
  api.nvim_create_autocmd('User', {
    group = group,
    pattern = 'CodeCompanionChatCreated',
    desc = 'Context Companion: refresh the instruction and add the editor context on each submit',
    callback = function(args)
      local chat = chat_of(args)
      if chat and not chat._context_companion then
        chat._context_companion = true
        chat:add_callback('on_before_submit', function(c)
          M.before_submit(c)
        end)
        chat:add_callback('on_closed', function(c)
          local session = M.session(c)
          -- the server forgets the chat's session (an error for a chat that never sent a turn is fine)
          cc.execute('endSession', { sessionId = session }, { bufnr = source_buf(c) }, function() end)
          -- and the plugin its cached copy of the chat's instruction (kept per client, per session)
          for _, per_client in pairs(lsp.state.cache) do
            per_client[session] = nil
          end
        end)
      end
    end,
  })
  api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'CodeCompanionChatCleared', 'CodeCompanionChatCompacting' },
    desc = 'Context Companion: the next turn of a cleared or compacted chat gets the full editor context',
    callback = function(args)
      local chat = chat_of(args)
      if chat then
        chat._context_companion_force_full = true
      end
    end,
  })
  return opts
end

return M
