--- Read-only scratch buffers that show what the server returned (instruction, turn context), kept
--- up to date when the server pushes a change.

local M = {}

local api = vim.api

--- [buffer name] = { bufnr, client_id, kind, session }
M.views = {}

---@param kind string
---@param session string
function M.name(kind, session)
  return ('context-companion://%s/%s'):format(kind, session)
end

---@param bufnr integer
---@param text string?
local function set_text(bufnr, text)
  local lines = vim.split(text or '', '\n', { plain = true })
  vim.bo[bufnr].modifiable = true
  api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].modified = false
end

---@param name string
---@return integer bufnr
local function create(name)
  local bufnr = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(bufnr, name)
  vim.bo[bufnr].bufhidden = 'wipe'
  vim.bo[bufnr].swapfile = false
  vim.bo[bufnr].filetype = 'markdown'
  vim.keymap.set('n', 'q', function()
    pcall(api.nvim_win_close, 0, false)
  end, { buffer = bufnr, nowait = true, desc = 'Close this Context Companion view' })
  api.nvim_create_autocmd('BufWipeout', {
    buffer = bufnr,
    once = true,
    callback = function()
      M.views[name] = nil
    end,
  })
  return bufnr
end

--- Show `text` in the view `kind`/`session`, creating it in a split (honouring :vertical, :tab, …)
--- or focusing the window that already shows it.
---@param kind string "instruction" or "turn-context"
---@param session string
---@param client_id integer
---@param text string?
---@param smods table? the user command's `smods`
---@param info table? stored in b:context_companion
---@return integer bufnr
function M.show(kind, session, client_id, text, smods, info)
  local name = M.name(kind, session)
  local view = M.views[name]
  local bufnr = view and api.nvim_buf_is_valid(view.bufnr) and view.bufnr or create(name)
  M.views[name] = { bufnr = bufnr, client_id = client_id, kind = kind, session = session }
  vim.b[bufnr].context_companion_client = client_id
  vim.b[bufnr].context_companion = info or vim.empty_dict()
  set_text(bufnr, text)
  local win = vim.fn.bufwinid(bufnr)
  if win ~= -1 then
    api.nvim_set_current_win(win)
  else
    vim.cmd({ cmd = 'split', mods = smods or {} })
    api.nvim_win_set_buf(0, bufnr)
  end
  return bufnr
end

--- The turn-context view's text: what the agent would receive, then the `memoryUpdates` it carries
--- (memory delivered with the turn instead of the system instruction).
---@param result table a getTurnContext result
---@return string
function M.turn_text(result)
  local text = type(result.text) == 'string' and result.text or ''
  local updates = type(result.memoryUpdates) == 'table' and result.memoryUpdates or {}
  if #updates == 0 then
    return text
  end
  local lines = { (text:gsub('%s+$', '')), '', ('## Memory updates (%d)'):format(#updates), '' }
  table.insert(lines, 'Memory files delivered with this turn instead of the system instruction:')
  table.insert(lines, '')
  table.insert(lines, '| file | tokens | why |')
  table.insert(lines, '| --- | ---: | --- |')
  for _, u in ipairs(updates) do
    local path = tostring(u.path or '?'):gsub('|', '\\|')
    local reason = tostring(u.reason or ''):gsub('|', '\\|')
    table.insert(lines, ('| `%s` | %s | %s |'):format(path, tostring(u.tokens or '?'), reason))
  end
  return table.concat(lines, '\n')
end

--- The server pushed a new instruction: refresh the instruction views of those sessions.
---@param client_id integer?
---@param params table
function M.on_changed(client_id, params)
  local sessions = type(params.sessions) == 'table' and params.sessions or {}
  for _, view in pairs(M.views) do
    if view.kind == 'instruction' and view.client_id == client_id and vim.tbl_contains(sessions, view.session) then
      require('context_companion').system_instruction(
        { client_id = client_id, sessionId = view.session },
        function(err, result)
          if err or type(result) ~= 'table' or not api.nvim_buf_is_valid(view.bufnr) then
            return
          end
          vim.b[view.bufnr].context_companion = { etag = result.etag, tokens = result.tokens }
          set_text(view.bufnr, result.text)
        end
      )
    end
  end
end

return M
