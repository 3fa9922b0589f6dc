"""Lua that every Neovim test harness loads: ``_G.t_eval(json)`` runs a chunk of Lua sent as a JSON
string and answers ``{"ok": true, "value": ...}`` or ``{"ok": false, "error": ...}`` as JSON, so a
test gets a Lua error as a message instead of an RPC failure. (A module of its own, like
lsp_harness.py, so files under tests/editors and tests/agents share one copy.)"""

EVAL_LUA = r"""
function _G.t_eval(json)
  local chunk, err = loadstring(vim.json.decode(json))
  if not chunk then
    return vim.json.encode({ ok = false, error = err })
  end
  local ok, value = pcall(chunk)
  if not ok then
    return vim.json.encode({ ok = false, error = tostring(value) })
  end
  local encoded, out = pcall(vim.json.encode, { ok = true, value = value })
  if not encoded then
    return vim.json.encode({ ok = false, error = 'cannot encode the result: ' .. tostring(out) })
  end
  return out
end
"""
