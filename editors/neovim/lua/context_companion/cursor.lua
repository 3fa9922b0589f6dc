--- Cursor and selection reports: `contextCompanion/didChangeCursor`, debounced.
---
--- Only positions go to the server (0-based, in the client's negotiated position encoding); the server
--- reads the selected text from its own copy of the document.

local lsp = require('context_companion.lsp')

local M = {}

local api = vim.api
local EVENTS = { 'CursorMoved', 'CursorMovedI', 'BufEnter', 'ModeChanged' }
local VISUAL = { v = true, V = true, ['\22'] = true }

local timer ---@type uv.uv_timer_t?
local pending = false
--- A selection kept while its visual mode was left for the command line (`:'<,'>Cmd`): the command
--- runs with the selection still reported; the next cursor move or mode change drops it.
local kept ---@type { bufnr: integer, mode: string, start: integer[], finish: integer[] }?
--- The area of a visual mode that just ended, until the next report (see on_event).
local leaving ---@type { bufnr: integer, mode: string, start: integer[], finish: integer[] }?

--- Buffers whose autocmds are installed: [bufnr] = augroup id.
M.attached = {}

---@param mode string
local function visual_kind(mode)
  local first = mode:sub(1, 1)
  if VISUAL[first] then
    return first
  end
  return nil
end

---@param bufnr integer
---@param row integer 0-based
local function line_at(bufnr, row)
  return api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
end

---@param bufnr integer
---@param row integer 0-based
---@param byte integer 0-based byte offset
---@param encoding string
local function position(bufnr, row, byte, encoding)
  local line = line_at(bufnr, row)
  byte = math.max(0, math.min(byte, #line))
  return { line = row, character = vim.lsp.util.character_offset(bufnr, row, byte, encoding) }
end

--- `getregionpos()` segments for Neovim 0.10, which does not have it: byte columns from the two
--- positions, per line for blockwise mode (exact for text without wide characters there).
---@param bufnr integer
---@param mode string
---@param p1 integer[]
---@param p2 integer[]
---@param exclusive boolean
function M.fallback_segments(bufnr, mode, p1, p2, exclusive)
  local a, b = p1, p2
  if b[2] < a[2] or (b[2] == a[2] and b[3] < a[3]) then
    a, b = b, a
  end
  local function last_byte(row, col) -- 1-based inclusive end of the character at col
    local line = line_at(bufnr, row - 1)
    col = math.min(col, #line)
    if col < 1 then
      return 0
    end
    return exclusive and col - 1 or col + vim.str_utf_end(line, col)
  end
  if mode == 'V' then
    return { { { 0, a[2], 1, 0 }, { 0, b[2], #line_at(bufnr, b[2] - 1) + 1, 0 } } }
  end
  if mode == 'v' then
    return { { { 0, a[2], a[3], 0 }, { 0, b[2], last_byte(b[2], b[3]), 0 } } }
  end
  local left, right = math.min(p1[3], p2[3]), math.max(p1[3], p2[3])
  local segments = {}
  for row = a[2], b[2] do
    table.insert(segments, { { 0, row, left, 0 }, { 0, row, last_byte(row, right), 0 } })
  end
  return segments
end

--- LSP ranges of a visual selection between two `getpos()` positions.
---
--- `getregionpos()` does the Vim part (inclusive/exclusive 'selection', multibyte characters, block
--- columns by display width, one segment per line); each segment's end is the last byte of its last
--- character, so the exclusive LSP end is that byte count. (`make_given_range_params()` adds one code
--- unit to the end instead, which cuts a final emoji in half in UTF-16 and misses linewise ends.)
---@param bufnr integer
---@param mode string "v", "V" or "\22"
---@param p1 integer[] getpos() list
---@param p2 integer[] getpos() list
---@param encoding string
---@param segments_of? function for tests: replaces getregionpos()
---@return lsp.Range[]
function M.ranges(bufnr, mode, p1, p2, encoding, segments_of)
  local exclusive = vim.o.selection == 'exclusive'
  local ok, segments
  if segments_of == nil and vim.fn.exists('*getregionpos') == 1 then
    ok, segments = pcall(vim.fn.getregionpos, p1, p2, { type = mode, exclusive = exclusive, eol = true })
  else
    ok, segments = pcall(segments_of or M.fallback_segments, bufnr, mode, p1, p2, exclusive)
  end
  if not ok or type(segments) ~= 'table' or #segments == 0 then
    return {}
  end
  local ranges = {}
  for _, segment in ipairs(segments) do
    local s, e = segment[1], segment[2]
    local row = s[2] - 1
    local line = line_at(bufnr, e[2] - 1)
    local start = position(bufnr, row, s[3] - 1, encoding)
    local finish
    if e[3] > #line and mode == 'V' then
      -- a whole line: the range ends at the start of the next line (the line break is selected)
      finish = { line = e[2], character = 0 }
    else
      local end_byte = e[3] -- inclusive 1-based last byte = exclusive 0-based end
      if e[2] == s[2] then
        end_byte = math.max(end_byte, s[3] - 1) -- an empty segment ends where it starts
      end
      finish = position(bufnr, e[2] - 1, end_byte, encoding)
    end
    table.insert(ranges, { start = start, ['end'] = finish })
  end
  if mode ~= '\22' then
    -- characterwise and linewise selections are one range from the first to the last segment
    return { { start = ranges[1].start, ['end'] = ranges[#ranges]['end'] } }
  end
  return ranges
end

--- The selections to report for the current window: the live visual selection, the kept one while
--- a command-line from visual mode runs, else an empty selection at the cursor.
---@param bufnr integer
---@param encoding string
---@param cursor lsp.Position
---@return lsp.Range[]
local function selections(bufnr, encoding, cursor)
  local mode = visual_kind(api.nvim_get_mode().mode)
  if mode then
    local ok, ranges = pcall(M.ranges, bufnr, mode, vim.fn.getpos('v'), vim.fn.getpos('.'), encoding)
    if ok and #ranges > 0 then
      return ranges
    end
  elseif kept and kept.bufnr == bufnr then
    local ok, ranges = pcall(M.ranges, bufnr, kept.mode, kept.start, kept.finish, encoding)
    if ok and #ranges > 0 then
      return ranges
    end
  end
  return { { start = cursor, ['end'] = cursor } }
end

--- Send the cursor of the current window now, to every Context Companion client of its buffer.
function M.send()
  local win = api.nvim_get_current_win()
  local bufnr = api.nvim_win_get_buf(win)
  if not M.attached[bufnr] then
    return
  end
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr, name = lsp.NAME })) do
    if client.initialized then
      local encoding = client.offset_encoding or 'utf-16'
      local params = vim.lsp.util.make_position_params(win, encoding)
      params.selections = selections(bufnr, encoding, params.position)
      lsp.notify(client, lsp.CURSOR, params)
    end
  end
end

--- Send a pending (debounced) report at once; does nothing when none is pending.
function M.flush()
  if not pending then
    return
  end
  pending = false
  if timer then
    timer:stop()
  end
  -- Nothing to report while typing a command line: the buffer and cursor have not changed.
  if api.nvim_get_mode().mode:sub(1, 1) == 'c' then
    return
  end
  leaving = nil
  local ok, err = pcall(M.send)
  if not ok then
    vim.notify_once('Context Companion: could not send the cursor: ' .. tostring(err), vim.log.levels.WARN)
  end
end

--- Queue a report; it is sent `debounce_ms` after the last event.
function M.schedule()
  pending = true
  local delay = lsp.options().debounce_ms
  if delay == 0 then
    return vim.schedule(M.flush)
  end
  if not timer then
    timer = assert(vim.uv.new_timer())
  end
  timer:stop()
  timer:start(delay, 0, vim.schedule_wrap(M.flush))
end

---@param args vim.api.keyset.create_autocmd.callback_args
local function on_event(args)
  if args.event ~= 'ModeChanged' then
    kept, leaving = nil, nil
    return M.schedule()
  end
  local event = vim.v.event or {}
  local old, new = event.old_mode or '', event.new_mode or ''
  local from = visual_kind(old)
  if from and not visual_kind(new) then
    -- Visual mode ended; `:` from visual mode ends it on the way to the command line
    -- (visual → normal → command-line), so remember its area (now in the '< and '> marks).
    leaving = { bufnr = args.buf, mode = from, start = vim.fn.getpos("'<"), finish = vim.fn.getpos("'>") }
    kept = nil
  elseif new:sub(1, 1) == 'c' and leaving then
    kept, leaving = leaving, nil
  elseif not (old:sub(1, 1) == 'c' and kept) then
    kept, leaving = nil, nil
  end
  M.schedule()
end

--- Leaving the window: a selection whose visual mode ended on the way out (`<C-w>` from visual mode,
--- to ask an agent about it in another window) stays the editor's selection, as for a command run
--- from visual mode; then any pending report goes now.
---@param args vim.api.keyset.create_autocmd.callback_args
local function on_leave(args)
  if leaving and leaving.bufnr == args.buf then
    kept, leaving = leaving, nil
  end
  M.flush()
end

--- Report the cursor of `bufnr` to the server from now on.
---@param bufnr integer
function M.attach(bufnr)
  if M.attached[bufnr] then
    M.schedule()
    return
  end
  local group = api.nvim_create_augroup('context_companion.cursor.' .. bufnr, { clear = true })
  api.nvim_create_autocmd(EVENTS, { group = group, buffer = bufnr, callback = on_event })
  -- Leaving the window or buffer (say, for an agent's chat window) sends a pending report now: the
  -- report is of the current window, which would no longer be this one when the debounce ends.
  api.nvim_create_autocmd({ 'WinLeave', 'BufLeave' }, { group = group, buffer = bufnr, callback = on_leave })
  M.attached[bufnr] = group
  if bufnr == api.nvim_get_current_buf() then
    M.schedule()
  end
end

--- Stop reporting for `bufnr` once no Context Companion client is attached to it.
---@param bufnr integer
---@param leaving_client_id integer?
function M.detach(bufnr, leaving_client_id)
  local group = M.attached[bufnr]
  if not group then
    return
  end
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr, name = lsp.NAME })) do
    if client.id ~= leaving_client_id then
      return
    end
  end
  pcall(api.nvim_del_augroup_by_id, group)
  M.attached[bufnr] = nil
end

return M
