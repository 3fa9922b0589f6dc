--- :checkhealth context_companion: what is missing, and the exact command that fixes it.

local M = {}

local function probe(cmd)
  local ok, result = pcall(function()
    return vim.system(cmd, { text = true, cwd = require('context_companion.install').launch_dir() }):wait(30000)
  end)
  if ok and result.code == 0 then
    return vim.trim(result.stdout or '')
  end
  return nil
end

function M.check()
  local health = vim.health
  local lsp = require('context_companion.lsp')
  local install = require('context_companion.install')
  health.start('Context Companion')

  if vim.fn.has('nvim-0.10') == 1 then
    health.ok(('Neovim %s'):format(tostring(vim.version())))
  else
    health.error('Neovim 0.10 or newer is needed (vim.lsp.start, vim.fs.root)')
  end

  local setup_done = require('context_companion')._did_setup == true
  local enabled = vim.lsp.is_enabled and vim.lsp.is_enabled(lsp.NAME) or false
  if setup_done then
    health.ok('require("context_companion").setup() was called')
  elseif enabled then
    health.ok('started through vim.lsp.enable("context_companion")')
  else
    health.warn('not set up', { 'Call require("context_companion").setup() in your config' })
  end

  -- The server :ContextCompanionInstall puts in Neovim's data folder, and the Python it needs.
  local source = install.source()
  local wanted = source and source.version
  local installed = install.installed_version()
  local fix = ':' .. install.COMMAND
  if installed and wanted and installed ~= wanted then
    health.warn(
      ('the server in %s is %s, this plugin is %s'):format(install.venv(), installed, wanted),
      { ('Update it: %s'):format(fix) }
    )
  elseif installed then
    health.ok(('server %s installed in %s'):format(installed, install.venv()))
  else
    health.info(('no server installed in %s (%s puts one there)'):format(install.venv(), fix))
  end
  local python, version = install.find_python()
  if python then
    health.ok(('%s is Python %s (%s uses it)'):format(python, version, fix))
  else
    health.warn(version, { ('Then run %s, or %s /path/to/python3'):format(fix, fix) })
  end

  local user_cmd = lsp.options().cmd
  if enabled and not setup_done and vim.lsp.config then
    user_cmd = (vim.lsp.config[lsp.NAME] or {}).cmd
    if type(user_cmd) == 'table' and vim.deep_equal(user_cmd, lsp.default_cmd()) then
      user_cmd = nil -- the base configuration's default, not the user's
    end
  end
  local cmd = user_cmd or lsp.default_cmd()
  local whose = user_cmd and 'your `cmd`' or 'the default'
  local advice = user_cmd and { 'Fix `cmd` in your config, or remove it to use the server ' .. fix .. ' installs' } or { ('Install the server: %s'):format(fix) }
  if type(cmd) == 'function' then
    health.info('cmd is a function: not checked')
  elseif vim.fn.executable(cmd[1]) == 0 then
    health.error(('server command (%s) %q is not an executable'):format(whose, cmd[1]), advice)
  else
    local python = lsp.python_of(cmd)
    local shown = table.concat(cmd, ' ')
    local found
    if python then
      found = probe(vim.list_extend(vim.deepcopy(python), {
        '-c',
        'import context_companion, sys; sys.stdout.write(context_companion.__version__)',
      }))
    elseif cmd[2] == 'serve' then
      found = (probe({ cmd[1], '--version' }) or ''):match('^context%-companion (%S+)')
    end
    if python and not found then
      health.error(('server command (%s) %s: %s cannot import context_companion'):format(whose, shown, table.concat(python, ' ')), advice)
    elseif found then
      health.ok(('server command (%s): %s (context-companion %s)'):format(whose, shown, found))
    else
      health.ok(('server command (%s): %s'):format(whose, shown))
    end
  end

  local clients = vim.lsp.get_clients({ name = lsp.NAME })
  if #clients == 0 then
    health.info('no server running (open a file inside a workspace: a folder with .git or a memory file)')
  end
  for _, client in ipairs(clients) do
    health.ok(
      ('server %d running for %s (position encoding %s)'):format(
        client.id,
        tostring(client.root_dir),
        tostring(client.offset_encoding)
      )
    )
  end
end

return M
