--- Finding a running server (`context-companion serve --tcp`) and its token from the discovery
--- files it writes: `<user runtime dir>/context-companion/server-<pid>-<port>.json`, 0600 in a 0700
--- directory. Files others could read, or whose process is gone, are not trusted.

local M = {}

local uv = vim.uv or vim.loop

--- Where the server's platformdirs puts the runtime dir: $XDG_RUNTIME_DIR, /run/user/<uid>,
--- <tmp>/runtime-<uid>.
---@return string[]
function M.dirs()
  local uid = uv.getuid()
  local out, seen = {}, {}
  local tmp = os.getenv('TMPDIR') or '/tmp'
  for _, base in ipairs({ os.getenv('XDG_RUNTIME_DIR'), '/run/user/' .. uid, tmp .. '/runtime-' .. uid }) do
    if base and base ~= '' then
      local dir = vim.fs.normalize(base) .. '/context-companion'
      if not seen[dir] then
        seen[dir] = true
        table.insert(out, dir)
      end
    end
  end
  return out
end

local function alive(pid)
  local ok, err = pcall(uv.kill, pid, 0)
  if not ok then
    return false
  end
  return err == 0 or err == true
end

local function contains(folder, path)
  folder = vim.fs.normalize(folder)
  path = vim.fs.normalize(path)
  return path == folder or path:sub(1, #folder + 1) == folder .. '/'
end

---@class context_companion.DiscoveryEntry
---@field file string
---@field pid integer
---@field port integer
---@field transport string
---@field workspaceFolders string[]
---@field token string?

--- The live server whose workspace folders hold `root` (most specific folder, then newest file),
--- else one that has no client (no folders) yet.
---@param root string
---@param transport? string default "tcp"
---@param port? integer 0/nil: any
---@return context_companion.DiscoveryEntry?
function M.find(root, transport, port)
  transport = transport or 'tcp'
  local best, best_depth, best_mtime
  for _, dir in ipairs(M.dirs()) do
    for name, kind in vim.fs.dir(dir) do
      if kind == 'file' and name:match('^server%-%d+%-%d+%.json$') then
        local file = dir .. '/' .. name
        local st = uv.fs_lstat(file)
        if st and st.type == 'file' and st.uid == uv.getuid() and bit.band(st.mode, 63) == 0 then
          local fd = io.open(file, 'r')
          local text = fd and fd:read('*a')
          if fd then
            fd:close()
          end
          local ok, entry = pcall(vim.json.decode, text or '')
          if ok and type(entry) == 'table' and entry.transport == transport and type(entry.port) == 'number'
            and (not port or port == 0 or entry.port == port) and type(entry.pid) == 'number' and alive(entry.pid)
            and type(entry.workspaceFolders) == 'table' then
            local depth
            for _, folder in ipairs(entry.workspaceFolders) do
              if type(folder) == 'string' and contains(folder, root) then
                depth = math.max(depth or 0, #vim.fs.normalize(folder))
              end
            end
            -- A server without folders has had no client yet (they come with initialize): it may be ours.
            if not depth and #entry.workspaceFolders == 0 then
              depth = -1
            end
            local mtime = st.mtime.sec + st.mtime.nsec / 1e9
            if depth and (not best or depth > best_depth or (depth == best_depth and mtime > best_mtime)) then
              entry.file = file
              best, best_depth, best_mtime = entry, depth, mtime
            end
          end
        end
      end
    end
  end
  return best
end

return M
