-- Context Companion: user commands and cursor reporting. Nothing starts until
-- require('context_companion').setup() (or vim.lsp.enable('context_companion') on Neovim 0.11+).

if vim.g.loaded_context_companion then
  return
end
vim.g.loaded_context_companion = true

if vim.fn.has('nvim-0.10') == 0 then
  vim.notify_once('Context Companion needs Neovim 0.10 or newer.', vim.log.levels.ERROR)
  return
end

local api = vim.api

local function command(name, fn, opts)
  opts.force = true
  api.nvim_create_user_command(name, fn, opts)
end

command('ContextCompanionRefresh', function()
  require('context_companion.commands').refresh()
end, { desc = 'Context Companion: re-read memory files and rebuild the system instruction' })

command('ContextCompanionInstruction', function(args)
  require('context_companion.commands').instruction(args.smods)
end, { desc = 'Context Companion: show the system instruction' })

command('ContextCompanionTurnContext', function(args)
  require('context_companion.commands').turn_context(args.smods)
end, { range = true, desc = 'Context Companion: show the editor context an agent would get now' })

command('ContextCompanionMemory', function()
  require('context_companion.commands').memory()
end, { desc = 'Context Companion: list memory files, whether they are included and why' })

command('ContextCompanionExplain', function(args)
  require('context_companion.commands').explain(args.args, args.smods)
end, {
  nargs = 1,
  complete = function(lead)
    return require('context_companion.commands').complete('explain', lead)
  end,
  desc = 'Context Companion: which memory and rule files an agent would load, and why',
})

command('ContextCompanionSetup', function(args)
  require('context_companion.commands').setup_hooks(args.args)
end, {
  nargs = 1,
  complete = function(lead)
    return require('context_companion.commands').complete('setup', lead)
  end,
  desc = "Context Companion: set up an agent's hooks for this workspace (<Tab>: the agents the server lists)",
})

command('ContextCompanionInstall', function(args)
  require('context_companion.install').command(args)
end, {
  nargs = '?',
  bang = true,
  complete = 'shellcmd',
  desc = "Context Companion: install or update the server in Neovim's data folder (! = a fresh environment; argument: the Python)",
})

command('ContextCompanionAddMemory', function(args)
  require('context_companion.commands').add_memory(args.args, args.bang)
end, { nargs = '+', bang = true, desc = 'Context Companion: remember a fact (! = in the workspace AGENTS.md)' })

command('ContextCompanionStatus', function()
  require('context_companion.commands').status()
end, { desc = 'Context Companion: is the Gemini CLI companion running, and is a CLI connected?' })

command('ContextCompanionDiffAccept', function()
  require('context_companion.gemini').accept()
end, { desc = 'Context Companion: accept the Gemini CLI change in this diff (with your edits)' })

command('ContextCompanionDiffReject', function()
  require('context_companion.gemini').reject()
end, { desc = 'Context Companion: reject the Gemini CLI change in this diff' })

-- Cursor reports for every buffer a Context Companion client attaches to, however it was started.
local group = api.nvim_create_augroup('context_companion.attach', { clear = true })
api.nvim_create_autocmd('LspAttach', {
  group = group,
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if client and client.name == 'context_companion' then
      require('context_companion.cursor').attach(args.buf)
    end
  end,
})
api.nvim_create_autocmd('LspDetach', {
  group = group,
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if client and client.name == 'context_companion' then
      require('context_companion.cursor').detach(args.buf, client.id)
    end
  end,
})
