-- Base configuration for Neovim 0.11+:
--   vim.lsp.config('context_companion', { settings = { contextCompanion = { ... } } })
--   vim.lsp.enable('context_companion')
-- Fields given to vim.lsp.config() override these.

local lsp = require('context_companion.lsp')

return {
  cmd = lsp.default_cmd(),
  -- never the project: `python3 -m context_companion` imports from its working folder first
  cmd_cwd = require('context_companion.install').launch_dir(),
  root_dir = function(bufnr, on_dir)
    local root = lsp.root_for(bufnr)
    if root then
      on_dir(root)
    end
  end,
  settings = { contextCompanion = vim.empty_dict() },
  init_options = { capabilities = lsp.CLIENT_CAPABILITIES },
  handlers = lsp.handlers(),
  on_exit = function(code, signal, client_id)
    local resolved = vim.lsp.config[lsp.NAME]
    lsp.on_exit_for(resolved and resolved.cmd)(code, signal, client_id)
  end,
}
