--- :checkhealth context_companion

local M = {}

function M.check()
  local health = vim.health
  local lsp = require('context_companion.lsp')
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

  local cmd = lsp.options().cmd
  if enabled and not setup_done and vim.lsp.config then
    cmd = (vim.lsp.config[lsp.NAME] or {}).cmd
  end
  cmd = cmd or lsp.default_cmd()
  if type(cmd) == 'function' then
    health.info('cmd is a function: not checked')
  elseif vim.fn.executable(cmd[1]) == 0 then
    health.error(('%q is not an executable'):format(cmd[1]), {
      ('Install the server: python3 -m pip install %s'):format(lsp.PIP_PACKAGE),
      'or set cmd = { "/path/to/python", "-m", "context_companion", "serve" } in setup()',
    })
  else
    health.ok('server command: ' .. table.concat(cmd, ' '))
    local python = lsp.python_of(cmd)
    if python then
      local probe = vim.list_extend(vim.deepcopy(python), {
        '-c',
        'import context_companion, sys; sys.stdout.write(context_companion.__version__)',
      })
      local ok, result = pcall(function()
        return vim.system(probe, { text = true }):wait(10000)
      end)
      if ok and result.code == 0 then
        health.ok(('context_companion %s is importable by %s'):format(result.stdout, table.concat(python, ' ')))
      else
        health.error(('%s cannot import context_companion'):format(table.concat(python, ' ')), {
          ('%s -m pip install %s'):format(table.concat(python, ' '), lsp.PIP_PACKAGE),
        })
      end
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
